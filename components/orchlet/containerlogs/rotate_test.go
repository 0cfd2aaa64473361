package containerlogs

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/fakecritest"
	fakescript "orch.io/orch/fakecri/script"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// world is fakecri served on a unix socket, with a client to it and containers whose log
// directory is a temporary one.
type world struct {
	t      *testing.T
	ctx    context.Context
	mock   *clock.Mock
	rt     *fakecri.Runtime
	client cri.RuntimeService
	dir    string
}

// padding makes each scripted line about 100 bytes, so a few seconds of output pass MaxSize.
var padding = strings.Repeat("x", 60)

func newWorld(t *testing.T, script *fakescript.Script) *world {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(t0)
	if script == nil {
		script = &fakescript.Script{}
	}
	script.Containers = append(script.Containers, fakescript.ContainerRule{
		Match: fakescript.ContainerMatch{Name: "app*"},
		Logs:  &fakescript.LogSpec{Lines: []string{"line {n} " + padding}, Every: fakescript.Duration(time.Second)},
	})
	rt, sock := fakecritest.Start(t, fakecri.Options{Clock: mock, Seed: 1, Script: script})
	client, _ := fakecritest.Clients(t, sock)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &world{t: t, ctx: ctx, mock: mock, rt: rt, client: client, dir: t.TempDir()}
}

// start runs container name in its own pod and answers its id and log path.
func (w *world) start(name string) (string, string) {
	w.t.Helper()
	if _, err := w.rt.PullImage(w.ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}}); err != nil {
		w.t.Fatal(err)
	}
	logDir := filepath.Join(w.dir, "default_web-"+name+"_uid")
	sb, err := w.rt.RunPodSandbox(w.ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "web-" + name, Namespace: "default", Uid: "uid-" + name},
		LogDirectory: logDir,
	}})
	if err != nil {
		w.t.Fatal(err)
	}
	c, err := w.rt.CreateContainer(w.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		LogPath:  name + "/0.log",
	}})
	if err != nil {
		w.t.Fatal(err)
	}
	if _, err := w.rt.StartContainer(w.ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		w.t.Fatal(err)
	}
	return c.ContainerId, filepath.Join(logDir, name, "0.log")
}

func (w *world) advance(d time.Duration) {
	w.t.Helper()
	if err := w.rt.Advance(w.ctx, w.mock, d); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) rotator(maxSize int64, maxFiles, workers int) *Rotator {
	w.t.Helper()
	r, err := New(Options{Clock: w.mock, Runtime: w.client, MaxSize: maxSize, MaxFiles: maxFiles, Workers: workers, Interval: 10 * time.Second})
	if err != nil {
		w.t.Fatal(err)
	}
	return r
}

// files lists a container's log files by name, sorted.
func files(t *testing.T, log string) []string {
	t.Helper()
	m, err := filepath.Glob(log + "*")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range m {
		out = append(out, filepath.Base(p))
	}
	slices.Sort(out)
	return out
}

// numbers reads the line numbers of the scripted lines in p, gunzipping a .gz file.
func numbers(t *testing.T, p string) []int {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(p, ".gz") {
		if r, err = gzip.NewReader(f); err != nil {
			t.Fatal(err)
		}
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if l == "" {
			continue
		}
		var n int
		if _, err := fmt.Sscanf(strings.SplitN(l, " ", 4)[3], "line %d", &n); err != nil {
			t.Fatalf("%s: line %q: %v", p, l, err)
		}
		out = append(out, n)
	}
	return out
}

func seq(from, to int) []int {
	var out []int
	for n := from; n <= to; n++ {
		out = append(out, n)
	}
	return out
}

// TestRotate: each round the live file, once at MaxSize, is renamed with the clock's timestamp
// and the runtime reopens the path; the file rotated before is gzipped; at most MaxFiles files
// remain, the oldest removed first; no line is lost or repeated among the files kept.
func TestRotate(t *testing.T) {
	w := newWorld(t, nil)
	id, log := w.start("app")
	r := w.rotator(900, 3, 1)

	w.advance(5 * time.Second) // 5 lines, ~500 bytes: below the size
	if err := r.Rotate(w.ctx); err != nil {
		t.Fatal(err)
	}
	if got := files(t, log); !slices.Equal(got, []string{"0.log"}) {
		t.Fatalf("below max size: files %v", got)
	}

	w.advance(5 * time.Second) // 10 lines: rotated
	r.Rotate(w.ctx)
	if got, want := files(t, log), []string{"0.log", "0.log.20260101-000010"}; !slices.Equal(got, want) {
		t.Fatalf("first rotation: files %v, want %v", got, want)
	}
	w.advance(10 * time.Second)
	r.Rotate(w.ctx)
	if got, want := files(t, log), []string{"0.log", "0.log.20260101-000010.gz", "0.log.20260101-000020"}; !slices.Equal(got, want) {
		t.Fatalf("second rotation: files %v, want %v", got, want)
	}
	w.advance(10 * time.Second)
	r.Rotate(w.ctx)
	want := []string{"0.log", "0.log.20260101-000020.gz", "0.log.20260101-000030"}
	if got := files(t, log); !slices.Equal(got, want) {
		t.Fatalf("third rotation: files %v, want %v (the oldest removed)", got, want)
	}
	w.advance(3 * time.Second)
	w.client.ContainerStatus(w.ctx, id, false) // brings the log up to now
	var all []int
	dir := filepath.Dir(log)
	for _, f := range []string{want[1], want[2], want[0]} {
		all = append(all, numbers(t, filepath.Join(dir, f))...)
	}
	if !slices.Equal(all, seq(11, 33)) {
		t.Fatalf("lines across the files kept: %v, want 11..33", all)
	}
}

// TestRotateOnlyRunning: an exited container's log is left as it is, however large.
func TestRotateOnlyRunning(t *testing.T) {
	w := newWorld(t, nil)
	id, log := w.start("app")
	w.advance(20 * time.Second)
	if _, err := w.client.ContainerStatus(w.ctx, id, false); err != nil {
		t.Fatal(err)
	}
	if err := w.client.StopContainer(w.ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	r := w.rotator(100, 2, 1)
	r.Rotate(w.ctx)
	if got := files(t, log); !slices.Equal(got, []string{"0.log"}) {
		t.Fatalf("files %v", got)
	}
}

// TestRotateReopenFails: when the runtime cannot reopen the log, the file is put back and the
// next round rotates it.
func TestRotateReopenFails(t *testing.T) {
	w := newWorld(t, &fakescript.Script{Faults: []fakescript.FaultRule{{Method: "ReopenContainerLog", Times: 1, Error: &fakescript.FaultError{Code: "Unavailable", Message: "busy"}}}})
	_, log := w.start("app")
	w.advance(20 * time.Second)
	r := w.rotator(1000, 5, 1)
	r.Rotate(w.ctx)
	if got := files(t, log); !slices.Equal(got, []string{"0.log"}) {
		t.Fatalf("after a failed reopen: files %v, want the log put back", got)
	}
	if got := numbers(t, log); !slices.Equal(got, seq(1, 20)) {
		t.Fatalf("after a failed reopen: lines %v", got)
	}
	w.advance(time.Second)
	r.Rotate(w.ctx)
	if got := files(t, log); !slices.Equal(got, []string{"0.log", "0.log.20260101-000021"}) {
		t.Fatalf("next round: files %v", got)
	}
}

// TestRotateRecovers: a missing live file is made again by the runtime, and the leftovers of a
// rotation cut short (a temporary file, a file already gzipped) are removed.
func TestRotateRecovers(t *testing.T) {
	w := newWorld(t, nil)
	id, log := w.start("app")
	w.advance(2 * time.Second)
	w.client.ContainerStatus(w.ctx, id, false)
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	for _, leftover := range []string{".20250101-000000.gz.tmp", ".20250101-000001", ".20250101-000001.gz"} {
		if err := os.WriteFile(log+leftover, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := w.rotator(1<<20, 5, 1)
	r.Rotate(w.ctx)
	if _, err := os.Stat(log); err != nil {
		t.Fatalf("the live log was not made again: %v", err)
	}
	w.advance(20 * time.Second)
	r = w.rotator(1000, 5, 1)
	r.Rotate(w.ctx)
	want := []string{"0.log", "0.log.20250101-000001.gz", "0.log.20260101-000022"}
	if got := files(t, log); !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
}

// TestRotateWorkers: every running container is rotated in a round, whatever the workers.
func TestRotateWorkers(t *testing.T) {
	for _, workers := range []int{1, 3} {
		w := newWorld(t, nil)
		var logs []string
		for i := range 4 {
			_, log := w.start(fmt.Sprintf("app%d", i))
			logs = append(logs, log)
		}
		w.advance(20 * time.Second)
		w.rotator(1000, 5, workers).Rotate(w.ctx)
		for _, log := range logs {
			if got := files(t, log); len(got) != 2 {
				t.Errorf("%d workers: %s: files %v, want rotated", workers, log, got)
			}
		}
	}
}

// TestRun: a round at once, then one per interval on the clock, never sooner.
func TestRun(t *testing.T) {
	w := newWorld(t, nil)
	r := w.rotator(1000, 5, 1)
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	lists := func() []calllog.Call { return w.rt.Calls(calllog.Filter{Method: "ListContainers"}) }
	deadline := time.Now().Add(10 * time.Second)
	for len(lists()) < 3 && time.Now().Before(deadline) {
		if w.mock.Now().Sub(t0) < 25*time.Second {
			w.mock.Add(500 * time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
	calls := lists()
	if len(calls) < 3 {
		t.Fatalf("%d rounds", len(calls))
	}
	for i, c := range calls[:3] {
		at := c.Start.Sub(t0)
		if min := time.Duration(i) * 10 * time.Second; at < min || at > min+2*time.Second {
			t.Errorf("round %d at %v, want at %v", i, at, min)
		}
	}
}

func TestNewRefuses(t *testing.T) {
	mock := clock.NewMock()
	ok := Options{Clock: mock, Runtime: fakeRuntime{}, MaxSize: 1, MaxFiles: 2, Workers: 1, Interval: 3 * time.Second}
	if _, err := New(ok); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		mod  func(*Options)
		want string
	}{
		{func(o *Options) { o.MaxSize = 0 }, "--container-log-max-size (containerLogMaxSize): must be positive"},
		{func(o *Options) { o.MaxFiles = 1 }, "--container-log-max-files (containerLogMaxFiles): must be > 1, got 1"},
		{func(o *Options) { o.Workers = 0 }, "--container-log-max-workers (containerLogMaxWorkers): must be >= 1"},
		{func(o *Options) { o.Interval = time.Second }, "--container-log-monitor-interval (containerLogMonitorInterval): must be at least 3s"},
		{func(o *Options) { o.Runtime = nil }, "a clock and a runtime are required"},
	}
	for _, tc := range cases {
		o := ok
		tc.mod(&o)
		if _, err := New(o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	for size, want := range map[string]int64{"10Mi": 10 << 20, "1000": 1000, "1k": 1000} {
		if got, err := ParseMaxSize(size); err != nil || got != want {
			t.Errorf("ParseMaxSize(%q) = %d, %v, want %d", size, got, err, want)
		}
	}
	for _, size := range []string{"big", "0", "-1Mi"} {
		if _, err := ParseMaxSize(size); err == nil || !strings.Contains(err.Error(), "--container-log-max-size") {
			t.Errorf("ParseMaxSize(%q): %v", size, err)
		}
	}
}

type fakeRuntime struct{ Runtime }
