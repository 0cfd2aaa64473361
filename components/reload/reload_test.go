package reload

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"

	"orch.io/orch/components/authz/authztest"
)

// value is what a test file configures: its trimmed text.
type value struct {
	text    string
	stopped atomic.Bool
}

const grace = time.Minute

// env is a reloader of a file in a test directory, on a mock clock, that keeps what it logs.
type env struct {
	t    *testing.T
	file string
	clk  *clock.Mock
	reg  *prometheus.Registry
	r    *Reloader[value]

	mu       sync.Mutex
	outcomes []Outcome[value]
	loads    int
}

// newEnv follows a file holding initial; the value in force was built from it.
func newEnv(t *testing.T, initial string) *env {
	e := &env{t: t, file: filepath.Join(t.TempDir(), "config"), clk: clock.NewMock(), reg: prometheus.NewRegistry()}
	e.write(initial)
	metrics, err := NewMetrics(e.reg, "test", "apiserver-test", true)
	if err != nil {
		t.Fatal(err)
	}
	e.r = New(Options[value]{
		File: e.file, Interval: 10 * time.Second, Clock: e.clk, Metrics: metrics,
		// "bad..." is invalid for good, "flaky..." for now; text that trims to the text in force
		// means the same.
		Load: func(_ context.Context, data []byte, current *value) (*value, error) {
			e.mu.Lock()
			e.loads++
			e.mu.Unlock()
			text := strings.TrimSpace(string(data))
			switch {
			case strings.HasPrefix(text, "bad"):
				return nil, errors.New("invalid")
			case strings.HasPrefix(text, "flaky"):
				return nil, Retry(errors.New("not yet"))
			case text == current.text:
				return nil, ErrSameMeaning
			}
			return &value{text: text}, nil
		},
		// "late..." never becomes ready.
		Ready: func(_ context.Context, next *value) error {
			if strings.HasPrefix(next.text, "late") {
				return errors.New("not ready")
			}
			return nil
		},
		Stop:  func(v *value) { v.stopped.Store(true) },
		Grace: func(*value) time.Duration { return grace },
		Log: func(o Outcome[value]) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.outcomes = append(e.outcomes, o)
		},
	}, &value{text: initial}, []byte(initial))
	return e
}

func (e *env) write(content string) {
	e.t.Helper()
	if err := os.WriteFile(e.file, []byte(content), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) reloads(status string) float64 {
	return metric(e.t, e.reg, "apiserver_test_config_controller_automatic_reloads_total", "status", status)
}

// metric is the value of the series of name with labels and the test server's identity, 0 when
// there is none.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	want := map[string]string{"apiserver_id_hash": hash([]byte("apiserver-test"))}
	for i := 0; i+1 < len(labels); i += 2 {
		want[labels[i]] = labels[i+1]
	}
	return authztest.Metric(t, reg, name, want)
}

// Each read decides: the same bytes are no reload, nor is content that means what is in force;
// changed content that loads and becomes ready is put in force and the old value stopped after
// its grace; content invalid for good is refused once, until it changes; content that fails for
// now, fails to become ready or cannot be read is tried again at each read.
func TestCheck(t *testing.T) {
	e := newEnv(t, "a")
	first := e.r.Current()
	steps := []struct {
		name        string
		content     string // "-": the file removed
		wantChanged bool
		wantStage   Stage // what is logged; -1 for nothing
		wantCurrent string
		wantLoads   int
		success     float64
		failure     float64
	}{
		{"the same bytes", "a", false, -1, "a", 0, 0, 0},
		{"the same meaning", "a\n", false, -1, "a", 1, 0, 0},
		{"the same meaning, read again", "a\n", false, -1, "a", 1, 0, 0},
		{"changed", "b", true, Reloaded, "b", 2, 1, 0},
		{"invalid", "bad", false, Load, "b", 3, 1, 1},
		{"invalid, read again", "bad", false, -1, "b", 3, 1, 1},
		{"failing for now", "flaky", false, Load, "b", 4, 1, 2},
		{"failing for now, read again", "flaky", false, Load, "b", 5, 1, 3},
		{"never ready", "late", false, Ready, "b", 6, 1, 4},
		{"never ready, read again", "late", false, Ready, "b", 7, 1, 5},
		{"removed", "-", false, Read, "b", 7, 1, 6},
		{"back to what is in force", "b", false, -1, "b", 8, 1, 6},
		{"changed again", "c", true, Reloaded, "c", 9, 2, 6},
	}
	for _, s := range steps {
		if s.content == "-" {
			if err := os.Remove(e.file); err != nil {
				t.Fatal(err)
			}
		} else {
			e.write(s.content)
		}
		e.outcomes = nil
		changed, err := e.r.Check(context.Background())
		if changed != s.wantChanged || (err != nil) != (s.wantStage != -1 && s.wantStage != Reloaded) {
			t.Fatalf("%s: Check = %v, %v", s.name, changed, err)
		}
		switch {
		case s.wantStage == -1 && len(e.outcomes) != 0:
			t.Fatalf("%s: logged %+v, want nothing", s.name, e.outcomes)
		case s.wantStage != -1 && (len(e.outcomes) != 1 || e.outcomes[0].Stage != s.wantStage):
			t.Fatalf("%s: logged %+v, want stage %d", s.name, e.outcomes, s.wantStage)
		}
		if got := e.r.Current().text; got != s.wantCurrent {
			t.Fatalf("%s: %q in force, want %q", s.name, got, s.wantCurrent)
		}
		if e.loads != s.wantLoads || e.reloads(Success) != s.success || e.reloads(Failure) != s.failure {
			t.Fatalf("%s: %d loads, %v successes, %v failures; want %d, %v, %v", s.name,
				e.loads, e.reloads(Success), e.reloads(Failure), s.wantLoads, s.success, s.failure)
		}
	}
	// The first value was replaced at step "changed": it serves its grace, then stops.
	if first.stopped.Load() {
		t.Fatal("the replaced value stopped before its grace")
	}
	e.clk.Add(grace)
	if !first.stopped.Load() {
		t.Fatal("the replaced value still runs after its grace")
	}
}

// The value in force is named by the hash of the content it came from, from the start on, and
// each reload's time is kept.
func TestConfigInfo(t *testing.T) {
	e := newEnv(t, "a")
	const info = "apiserver_test_config_controller_last_config_info"
	if got := metric(t, e.reg, info, "hash", hash([]byte("a"))); got != 1 {
		t.Fatalf("last_config_info of the file loaded at start = %v, want 1", got)
	}
	e.write("b")
	e.clk.Add(time.Second)
	if _, err := e.r.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := metric(t, e.reg, info, "hash", hash([]byte("b"))); got != 1 {
		t.Fatalf("last_config_info of the new file = %v, want 1", got)
	}
	if got := metric(t, e.reg, info, "hash", hash([]byte("a"))); got != 0 {
		t.Fatalf("last_config_info still names the old file")
	}
	if got := metric(t, e.reg, "apiserver_test_config_controller_automatic_reload_last_timestamp_seconds", "status", Success); got != float64(e.clk.Now().Unix()) {
		t.Errorf("last reload at %v, want %v", got, e.clk.Now().Unix())
	}
}

// Started, the reloader reads the file one interval after the start and then every interval; a
// clock moved as soon as Start returns is seen.
func TestStart(t *testing.T) {
	e := newEnv(t, "a")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.r.Start(ctx)
	e.write("b")
	e.clk.Add(9 * time.Second)
	time.Sleep(20 * time.Millisecond)
	if e.r.Current().text != "a" {
		t.Fatal("read before the interval")
	}
	e.clk.Add(time.Second)
	waitFor(t, "b in force", func() bool { return e.r.Current().text == "b" })
	e.write("c")
	e.clk.Add(10 * time.Second)
	waitFor(t, "c in force", func() bool { return e.r.Current().text == "c" })
}

// Without the content the value was built from, the first read loads whatever the file holds.
func TestUnknownAppliedContent(t *testing.T) {
	e := newEnv(t, "a")
	e.r.known, e.r.tracked = false, nil
	e.write("")
	if _, err := e.r.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if e.loads != 1 || e.r.Current().text != "" {
		t.Fatalf("%d loads, %q in force; want the empty file loaded", e.loads, e.r.Current().text)
	}
}

// Applied is the file's content only while it says what was loaded.
func TestApplied(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config")
	parse := func(data []byte) (string, error) {
		if strings.HasPrefix(string(data), "bad") {
			return "", errors.New("invalid")
		}
		return strings.TrimSpace(string(data)), nil
	}
	for _, tt := range []struct {
		name, content string
		want          bool
	}{
		{"as loaded", "a", true},
		{"as loaded, other bytes", "a\n", true},
		{"changed", "b", false},
		{"invalid", "bad", false},
		{"missing", "-", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(file)
			if tt.content != "-" {
				if err := os.WriteFile(file, []byte(tt.content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got := Applied(file, "a", parse)
			if (got != nil) != tt.want || (got != nil && string(got) != tt.content) {
				t.Errorf("Applied = %q, want content %v", got, tt.want)
			}
		})
	}
}

// The server's identity and the content are labelled by Kubernetes' hash form; no identity is no
// label value.
func TestHash(t *testing.T) {
	if got, want := hash([]byte("apiserver-x")), "sha256:"; !strings.HasPrefix(got, want) || len(got) != len(want)+64 {
		t.Errorf("hash = %q", got)
	}
	if hash(nil) != "" {
		t.Error("the hash of nothing is not empty")
	}
}

// A kind's metrics are registered once.
func TestMetricsRegisteredOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := NewMetrics(reg, "test", "id", false); err != nil {
		t.Fatal(err)
	}
	if _, err := NewMetrics(reg, "test", "id", false); err == nil || !strings.Contains(err.Error(), "registering the test reload metrics") {
		t.Fatalf("second registration: %v", err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5s: %s", what)
		}
	}
}
