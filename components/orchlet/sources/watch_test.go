package sources

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

// waitFor is how long a test waits, in real time, for inotify to deliver what it must.
const waitFor = 10 * time.Second

func write(t *testing.T, p, data string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestInotifyNotifier: the watch reports itself in place, then each entry created, written,
// renamed and removed, never a dot file, and ends with ErrPathMissing when the directory goes.
func TestInotifyNotifier(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Fatalf("inotify is Linux only; this test runs where the agent does")
	}
	dir := t.TempDir()
	names := make(chan string, 100)
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { done <- osNotifier(dir).Notify(ctx, func(n string) { names <- n }) }()
	next := func(want string) {
		t.Helper()
		select {
		case got := <-names:
			if got != want {
				t.Fatalf("changed(%q), want changed(%q)", got, want)
			}
		case <-time.After(waitFor):
			t.Fatalf("no changed(%q) after %v", want, waitFor)
		}
	}
	next("") // in place
	write(t, filepath.Join(dir, ".a.yaml.swp"), "junk")
	write(t, filepath.Join(dir, "a.yaml"), "x") // create, then modify
	next("a.yaml")
	next("a.yaml")
	if err := os.Rename(filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	next("a.yaml")
	next("b.yaml")
	if err := os.Remove(filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	next("b.yaml")
	if err := os.Remove(filepath.Join(dir, ".a.yaml.swp")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrPathMissing) {
			t.Fatalf("watch of a removed directory ended with %v, want ErrPathMissing", err)
		}
	case <-time.After(waitFor):
		t.Fatal("the watch did not end when its directory was removed")
	}
	if err := osNotifier(dir).Notify(ctx, func(string) {}); !errors.Is(err, ErrPathMissing) {
		t.Fatalf("watch of a missing path: %v, want ErrPathMissing", err)
	}
}

// TestInotifyNotifierFile: a manifest path that is one file is watched as that file.
func TestInotifyNotifierFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pod.yaml")
	write(t, p, "x")
	names := make(chan string, 100)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- osNotifier(p).Notify(ctx, func(n string) { names <- n }) }()
	if got := <-names; got != "" {
		t.Fatalf("first changed(%q), want the watch in place", got)
	}
	write(t, p, "y")
	select {
	case got := <-names:
		if got != "pod.yaml" {
			t.Fatalf("changed(%q), want pod.yaml", got)
		}
	case <-time.After(waitFor):
		t.Fatal("a write to the watched file was not reported")
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled watch ended with %v", err)
	}
}

// TestRunWatchesManifestDirectory: with the poll clock never advanced, a manifest written, changed
// and removed reaches the desired state at once, a dot file changes nothing, and the periodic poll
// keeps its schedule as the fallback.
func TestRunWatchesManifestDirectory(t *testing.T) {
	dir := t.TempDir()
	c := v1beta1.NewDefault()
	c.StaticPodPath = dir
	polls, err := FromConfig(c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := newMock()
	start := clk.Now()
	r := &problems{}
	s := mustNew(t, clk, r, polls...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	expect := func(want string) {
		t.Helper()
		deadline := time.After(waitFor)
		var got string
		for got != want {
			select {
			case <-s.Ready():
				got += lines(s.Drain())
			case <-deadline:
				t.Fatalf("updates %q, want %q without advancing the clock", got, want)
			}
		}
	}
	// Written whole under a dot name, then moved in, so no read sees half a manifest.
	put := func(data string) {
		write(t, filepath.Join(dir, ".web.yaml.tmp"), data)
		if err := os.Rename(filepath.Join(dir, ".web.yaml.tmp"), filepath.Join(dir, "web.yaml")); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(dir, ".web.yaml.swp"), podYAML("swap", "nginx"))
	put(podYAML("web", "nginx"))
	expect("ADD file default/web-node-a\n")
	put(podYAML("web", "nginx:2")) // a new content UID: the old pod goes, the new one comes
	expect("REMOVE file default/web-node-a\nADD file default/web-node-a\n")
	if err := os.Rename(filepath.Join(dir, "web.yaml"), filepath.Join(dir, ".web.yaml.bak")); err != nil {
		t.Fatal(err)
	}
	expect("REMOVE file default/web-node-a\n")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run ended with %v", err)
	}
	if !clk.Now().Equal(start) {
		t.Fatal("the clock moved")
	}
	// A change seen after the last update (a rename's second event) may have left a read pending,
	// due at once; reading it changes nothing, and the poll's schedule is what is checked.
	s.Step(context.Background())
	if got := lines(s.Drain()); got != "" {
		t.Errorf("a pending read delivered %q, want nothing", got)
	}
	if next, _ := s.NextDeadline(); !next.Equal(start.Add(c.FileCheckFrequency.Duration)) {
		t.Errorf("next poll at %v, want the fallback's schedule %v", next.Sub(start), c.FileCheckFrequency.Duration)
	}
	if len(r.got) != 0 {
		t.Errorf("problems %v", r.reasons())
	}
}

// TestRunWatchesMissingDirectory: a manifest directory made after the agent started is watched
// from the next one-second retry, well before the 20 s poll.
func TestRunWatchesMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	c := v1beta1.NewDefault()
	c.StaticPodPath = dir
	polls, err := FromConfig(c, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := newMock()
	s := mustNew(t, clk, &problems{}, polls...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.Run(ctx)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "web.yaml"), podYAML("web", "nginx"))
	deadline := time.Now().Add(waitFor)
	for s.Pending() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the manifest of a directory made later was not seen")
		}
		if clk.Now().Before(time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC)) {
			clk.Add(time.Second) // the watch's retries, never the poll's 20 s
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := lines(s.Drain()); got != "ADD file default/web-node-a\n" {
		t.Fatalf("updates %q", got)
	}
}

// TestRetryWatch: a missing path is retried every second; other failures back off from one second
// doubling to 20, starting over after a watch that ran longer than 20 s, as the kubelet's watch.
func TestRetryWatch(t *testing.T) {
	broken := errors.New("inotify: too many open files")
	cases := []struct {
		name       string
		err        error
		backoff    time.Duration
		ran        time.Duration
		wait, next time.Duration
	}{
		{"missing", ErrPathMissing, 8 * time.Second, 0, time.Second, time.Second},
		{"first failure", broken, time.Second, 0, time.Second, 2 * time.Second},
		{"doubling", broken, 4 * time.Second, time.Second, 4 * time.Second, 8 * time.Second},
		{"capped", broken, 16 * time.Second, 0, 16 * time.Second, 20 * time.Second},
		{"at the cap", broken, 20 * time.Second, 0, 20 * time.Second, 20 * time.Second},
		{"after a long watch", broken, 20 * time.Second, time.Minute, time.Second, 2 * time.Second},
	}
	for _, tc := range cases {
		wait, next := retryWatch(tc.err, tc.backoff, tc.ran)
		if wait != tc.wait || next != tc.next {
			t.Errorf("%s: wait %v then %v, want %v then %v", tc.name, wait, next, tc.wait, tc.next)
		}
	}
}
