package containerlogs

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	"orch.io/orch/components/syncbuf"
)

func appendFile(t *testing.T, p, data string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
}

// TestFollow: after the tail of what is written, lines are written as the runtime writes them,
// a line written in two goes is written whole, a rotation moves to the new file without losing
// the old one's last lines, and following ends when the container stops.
func TestFollow(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	writeFile(t, log, "2026-01-01T00:00:01Z stdout F one\n2026-01-01T00:00:02Z stdout F two\n")
	mock := clock.NewMock()
	var running atomic.Bool
	running.Store(true)
	out := &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- ReadLogs(context.Background(), log, &corev1.PodLogOptions{Follow: true, TailLines: i64(1)}, mock.Now(), out,
			&Follow{Clock: mock, Running: func(context.Context) bool { return running.Load() }})
	}()
	// until advances the clock a poll at a time until out holds want.
	until := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for out.String() != want {
			if time.Now().After(deadline) {
				t.Fatalf("followed %q, want %q", out.String(), want)
			}
			mock.Add(followPoll)
			time.Sleep(time.Millisecond)
		}
	}
	until("two\n")
	appendFile(t, log, "2026-01-01T00:00:03Z stdout F thr")
	appendFile(t, log, "ee\n")
	until("two\nthree\n")
	appendFile(t, log, "2026-01-01T00:00:04Z stdout F four\n")
	if err := os.Rename(log, log+".20260101-000004"); err != nil {
		t.Fatal(err)
	}
	appendFile(t, log+".20260101-000004", "2026-01-01T00:00:05Z stdout F five, before the reopen\n")
	writeFile(t, log, "2026-01-01T00:00:06Z stdout F six\n")
	until("two\nthree\nfour\nfive, before the reopen\nsix\n")
	running.Store(false)
	appendFile(t, log, "2026-01-01T00:00:07Z stdout F last\n")
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if got, want := out.String(), "two\nthree\nfour\nfive, before the reopen\nsix\nlast\n"; got != want {
				t.Fatalf("followed %q, want %q", got, want)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("following did not end when the container stopped")
		}
		mock.Add(followPoll)
		time.Sleep(time.Millisecond)
	}
}

// TestFollowEndsWithContext: a client that goes away ends the follow.
func TestFollowEndsWithContext(t *testing.T) {
	log := filepath.Join(t.TempDir(), "0.log")
	writeFile(t, log, "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ReadLogs(ctx, log, &corev1.PodLogOptions{Follow: true}, time.Time{}, &syncbuf.Buffer{},
			&Follow{Clock: clock.NewMock(), Running: func(context.Context) bool { return true }})
	}()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("following went on after the context ended")
	}
}

// chanNotifier hands the follower's changed function to the test, which calls it as a watch would.
type chanNotifier chan func(string)

func (n chanNotifier) Notify(ctx context.Context, changed func(string)) error {
	n <- changed
	<-ctx.Done()
	return ctx.Err()
}

// TestFollowWakesOnWatch: with a watch of the log's directory, a line written is followed as soon
// as the watch tells of the change, the clock not moving (no poll has come); the watch of the live
// log's directory ends with the follow.
func TestFollowWakesOnWatch(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	writeFile(t, log, "2026-01-01T00:00:01Z stdout F one\n")
	mock := clock.NewMock()
	out := &syncbuf.Buffer{}
	notifier := make(chanNotifier, 1)
	var watched atomic.Value
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ReadLogs(ctx, log, &corev1.PodLogOptions{Follow: true}, mock.Now(), out, &Follow{
			Clock: mock, Running: func(context.Context) bool { return true },
			Watch: func(d string) Notifier { watched.Store(d); return notifier },
		})
	}()
	changed := <-notifier
	if got := watched.Load(); got != dir {
		t.Fatalf("watched %v, want the log's directory %s", got, dir)
	}
	wait := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for out.String() != want {
			if time.Now().After(deadline) {
				t.Fatalf("followed %q, want %q", out.String(), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	wait("one\n")
	want := "one\n"
	for _, line := range []string{"two", "three"} {
		appendFile(t, log, "2026-01-01T00:00:02Z stdout F "+line+"\n")
		changed("0.log")
		want += line + "\n"
		wait(want)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("ReadLogs after the client went: %v", err)
	}
}
