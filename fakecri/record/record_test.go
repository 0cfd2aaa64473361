package record

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/fakecritest"
	"orch.io/orch/fakecri/fakecritest/fixture"
	"orch.io/orch/fakecri/script"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// recordScript is the upstream runtime the recorder stands in front of: a slow pull, a container
// that leaks, one that exits 3 after 5s and one OOM-killed after 7s.
var recordScript = &script.Script{
	Images: []script.ImageRule{{Match: "app:1", Size: ptrQ("50Mi"), PullDuration: script.Duration(3 * time.Second)}},
	Containers: []script.ContainerRule{
		{Match: script.ContainerMatch{Name: "leaker"}, Usage: &script.Usage{Memory: &script.Curve{Ramp: &script.Ramp{From: script.Q("10Mi"), PerSecond: ptrQ("1Mi")}}}},
		{Match: script.ContainerMatch{Name: "crasher"}, Exit: &script.ExitSpec{After: script.Duration(5 * time.Second), Code: 3}},
		{Match: script.ContainerMatch{Name: "oomer"}, OOMKillAfter: ptrD(7 * time.Second)},
	},
}

func ptrD(d time.Duration) *script.Duration { v := script.Duration(d); return &v }

// recordRig is a recorder in front of fakecri, both on one mock clock, served on a real gRPC
// socket, with CRI clients that go through it.
type recordRig struct {
	t    *testing.T
	ctx  context.Context
	mock *clock.Mock
	up   *fakecri.Runtime
	rec  *Recorder
	rs   runtimeapi.RuntimeServiceClient
	is   runtimeapi.ImageServiceClient
}

func newRecordRig(t *testing.T) *recordRig {
	mock := clock.NewMock()
	mock.Set(fixture.Epoch)
	up, err := fakecri.New(fakecri.Options{Clock: mock, Seed: 3, Script: recordScript})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	rec, err := New(ctx, Options{Upstream: fakecritest.Serve(t, up), Clock: mock, SamplePeriod: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	sock := filepath.Join(t.TempDir(), "rec.sock")
	lis, err := fakecri.Listen("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := rec.NewGRPCServer()
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &recordRig{t: t, ctx: ctx, mock: mock, up: up, rec: rec,
		rs: runtimeapi.NewRuntimeServiceClient(conn), is: runtimeapi.NewImageServiceClient(conn)}
}

func (g *recordRig) advance(d time.Duration) {
	g.t.Helper()
	if err := g.up.Advance(g.ctx, g.mock, d); err != nil {
		g.t.Fatal(err)
	}
}

func (g *recordRig) sample() {
	g.t.Helper()
	if err := g.rec.Sample(g.ctx); err != nil {
		g.t.Fatal(err)
	}
}

// pullAndRunPod pulls app:1 through the recorder, which takes 3s of the clock, and runs pod p.
func (g *recordRig) pullAndRunPod() *runtimeapi.RunPodSandboxResponse {
	g.t.Helper()
	pulled := make(chan error, 1)
	go func() {
		_, err := g.is.PullImage(g.ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "app:1"}})
		pulled <- err
	}()
	waitFor(g.t, func() bool { return len(g.up.Calls(calllog.Filter{Method: "PullImage"})) == 1 })
	g.advance(3 * time.Second)
	if err := <-pulled; err != nil {
		g.t.Fatal(err)
	}
	sb, err := g.rs.RunPodSandbox(g.ctx, &runtimeapi.RunPodSandboxRequest{Config: fixture.PodConfig("p", nil)})
	if err != nil {
		g.t.Fatal(err)
	}
	return sb
}

func (g *recordRig) start(pod, name string, attempt uint32) string {
	g.t.Helper()
	cfg := fixture.ContainerConfig(name, "app:1", 0)
	cfg.Metadata.Attempt = attempt
	c, err := g.rs.CreateContainer(g.ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: cfg})
	if err != nil {
		g.t.Fatal(err)
	}
	if _, err := g.rs.StartContainer(g.ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		g.t.Fatal(err)
	}
	return c.ContainerId
}

// TestRecorderForwardsAndScripts runs a workload through the recorder and checks that every call
// reached the upstream and came back as it answered (errors and streams too), and that the script
// written from what the recorder saw holds the pull's size and time, each attempt's exit and the
// leak's slope.
func TestRecorderForwardsAndScripts(t *testing.T) {
	g := newRecordRig(t)
	events, err := g.rs.GetContainerEvents(g.ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	sb := g.pullAndRunPod()
	leaker := g.start(sb.PodSandboxId, "leaker", 0)
	g.start(sb.PodSandboxId, "crasher", 0)
	g.start(sb.PodSandboxId, "oomer", 0)
	if ev, err := events.Recv(); err != nil || ev.ContainerEventType != runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT {
		t.Fatalf("the event stream through the recorder: %v, %v", ev, err)
	}
	for round := 1; round <= 6; round++ {
		g.advance(10 * time.Second)
		g.sample()
		if round == 2 { // the agent restarts the crasher
			g.start(sb.PodSandboxId, "crasher", 1)
		}
	}
	if _, err := g.rs.StopContainer(g.ctx, &runtimeapi.StopContainerRequest{ContainerId: leaker, Timeout: 2}); err != nil {
		t.Fatal(err)
	}
	g.advance(time.Second)
	g.sample()
	_, err = g.rs.StartContainer(g.ctx, &runtimeapi.StartContainerRequest{ContainerId: "no-such"})
	wantCode(t, err, codes.NotFound)
	if got, want := len(g.up.Calls(calllog.Filter{Method: "StartContainer"})), 5; got != want {
		t.Errorf("upstream StartContainer calls = %d, want %d (every call forwarded)", got, want)
	}

	s := g.rec.Script()
	if len(s.Images) != 1 || s.Images[0].Match != "app:1" || s.Images[0].Size.String() != "50Mi" || s.Images[0].PullDuration.D() != 3*time.Second {
		t.Errorf("images = %+v", s.Images)
	}
	var got []string
	for _, c := range s.Containers {
		line := c.Match.Name + " attempt " + u32s(c.Match.MinAttempt) + ".." + u32s(c.Match.MaxAttempt)
		switch {
		case c.Exit != nil:
			line += " exit " + c.Exit.After.D().String() + " code " + strconv.Itoa(int(c.Exit.Code))
		case c.OOMKillAfter != nil:
			line += " oom " + c.OOMKillAfter.D().String()
		}
		got = append(got, line)
	}
	want := []string{"crasher attempt 0..0 exit 5s code 3", "crasher attempt 1.. exit 5s code 3", "leaker attempt 0..", "oomer attempt 0.. oom 7s"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("container rules:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	leak := s.Containers[2].Usage.Memory
	if leak == nil || leak.Ramp == nil || leak.Ramp.PerSecond == nil ||
		math.Abs(leak.Ramp.PerSecond.Value()-(1<<20)) > 1024 || math.Abs(leak.Ramp.From.Value()-10<<20) > 64<<10 {
		t.Errorf("the leak's memory = %+v, want a ramp from 10Mi growing 1Mi a second", leak)
	}
	if cpu := s.Containers[2].Usage.CPU; cpu == nil || cpu.Constant == nil || cpu.Constant.String() != "5m" {
		t.Errorf("the leak's CPU = %+v, want a constant 5m", cpu)
	}

	dir := t.TempDir()
	if err := g.rec.WriteRecording(dir, Recording{Node: "node-r", Args: []string{"--eviction-hard=memory.available<100Mi"}, Upstream: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := script.Load(filepath.Join(dir, "fakecri.yaml")); err != nil {
		t.Fatal(err)
	}
	sk, err := os.ReadFile(filepath.Join(dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"duration: 1m4s\n", "  - name: node-r\n", "#   default/p\n", "      containers:\n", "sampling the\n# containers' stats every 10s (7 rounds)"} {
		if !strings.Contains(string(sk), w) {
			t.Errorf("scenario skeleton lacks %q:\n%s", w, sk)
		}
	}
}

// TestRecordedScriptReplays plays the recorded script on a fresh fakecri: the same calls get the
// same exits at the same times and the leak's memory at the same level.
func TestRecordedScriptReplays(t *testing.T) {
	g := newRecordRig(t)
	sb := g.pullAndRunPod()
	for _, n := range []string{"leaker", "crasher", "oomer"} {
		g.start(sb.PodSandboxId, n, 0)
	}
	for range 4 {
		g.advance(10 * time.Second)
		g.sample()
	}

	f := fakecritest.NewFixture(t, g.rec.Script())
	pull := make(chan string, 1)
	go func() { pull <- f.Pull("app:1") }()
	waitFor(t, func() bool { return len(f.RT.Calls(calllog.Filter{Method: "PullImage"})) == 1 })
	f.Advance(3*time.Second - time.Millisecond)
	select {
	case <-pull:
		t.Fatal("the replayed pull ended before the recorded pull time")
	default:
	}
	f.Advance(time.Millisecond)
	<-pull
	p := f.RunPod("p", nil)
	ids := map[string]string{}
	for _, n := range []string{"leaker", "crasher", "oomer"} {
		ids[n] = f.Create(p, n, "app:1", 0)
		f.Start(ids[n])
	}
	f.Advance(30 * time.Second)
	if st := f.Status(ids["crasher"]); st.ExitCode != 3 || time.Duration(st.FinishedAt-st.StartedAt) != 5*time.Second {
		t.Errorf("replayed crasher: code %d after %v", st.ExitCode, time.Duration(st.FinishedAt-st.StartedAt))
	}
	if st := f.Status(ids["oomer"]); st.Reason != "OOMKilled" || time.Duration(st.FinishedAt-st.StartedAt) != 7*time.Second {
		t.Errorf("replayed oomer: %s after %v", st.Reason, time.Duration(st.FinishedAt-st.StartedAt))
	}
	stats, err := f.RT.ContainerStats(f.Ctx, &runtimeapi.ContainerStatsRequest{ContainerId: ids["leaker"]})
	if err != nil {
		t.Fatal(err)
	}
	if ws := float64(stats.Stats.Memory.WorkingSetBytes.Value); math.Abs(ws-40<<20) > 64<<10 {
		t.Errorf("replayed leak at 30s: %.0f bytes, want 40Mi", ws)
	}
}

func TestRecorderRefusesAnUnreachableUpstream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := New(ctx, Options{Upstream: "unix://" + filepath.Join(t.TempDir(), "none.sock")})
	if err == nil || !strings.Contains(err.Error(), "none.sock") {
		t.Fatalf("err = %v, want one naming the upstream", err)
	}
	if _, err := New(ctx, Options{Upstream: "http://x"}); err == nil || !strings.Contains(err.Error(), "--upstream") {
		t.Fatalf("err = %v, want one naming --upstream", err)
	}
}

func TestFitCurve(t *testing.T) {
	line := func(a, b float64) []point {
		var p []point
		for t := 10.0; t <= 60; t += 10 {
			p = append(p, point{t, a + b*t})
		}
		return p
	}
	for _, c := range []struct {
		name string
		pts  []point
		want string
	}{
		{"none", nil, "null"},
		{"flat", []point{{10, 100}, {20, 101}, {30, 100}}, `"100"`},
		{"leak", line(10<<20, 1<<20), `{"ramp":{"from":"10Mi","perSecond":"1Mi"}}`},
		{"falling", line(100<<20, -1<<20), `{"ramp":{"from":"100Mi","to":"40Mi","over":"1m0s"}}`},
		{"jump", []point{{10, 10 << 20}, {20, 10 << 20}, {30, 200 << 20}, {40, 200 << 20}}, `{"steps":[{"at":"0s","value":"10Mi"},{"at":"30s","value":"200Mi"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got string
			if cv := fitCurve(c.pts, bytesQ); cv == nil {
				got = "null"
			} else {
				b, err := cv.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				got = string(b)
			}
			if got != c.want {
				t.Errorf("fit = %s, want %s", got, c.want)
			}
		})
	}
}

func u32s(v *uint32) string {
	if v == nil {
		return ""
	}
	return strconv.Itoa(int(*v))
}

// TestRecorderLogs records a container's log lines, from the file the runtime wrote, read when it
// exits (the agent may remove the file with the container), and the script plays them back at
// their pace.
func TestRecorderLogs(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(fixture.Epoch)
	up, err := fakecri.New(fakecri.Options{Clock: mock, Seed: 3, CreateLogFiles: true, Script: &script.Script{Containers: []script.ContainerRule{
		{Match: script.ContainerMatch{Name: "talker"}, Logs: &script.LogSpec{Lines: []string{"hello {n}"}, Every: script.Duration(2 * time.Second), Count: 3},
			Exit: &script.ExitSpec{After: script.Duration(7 * time.Second)}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rec, err := New(ctx, Options{Upstream: fakecritest.Serve(t, up), Clock: mock, Logs: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	sock := filepath.Join(t.TempDir(), "rec.sock")
	lis, err := fakecri.Listen("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := rec.NewGRPCServer()
	go srv.Serve(lis)
	defer srv.Stop()
	rs, is := fakecritest.Clients(t, "unix://"+sock)
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "app:1"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	cfg := fixture.PodConfig("p", nil)
	cfg.LogDirectory = t.TempDir()
	pod, err := rs.RunPodSandbox(ctx, cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := rs.CreateContainer(ctx, pod, fixture.ContainerConfig("talker", "app:1", 0), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := up.Advance(ctx, mock, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := rec.Sample(ctx); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(cfg.LogDirectory); err != nil {
		t.Fatal(err)
	}
	s := rec.Script()
	if len(s.Containers) != 1 || s.Containers[0].Logs == nil || s.Containers[0].Exit == nil {
		t.Fatalf("containers = %+v", s.Containers)
	}
	l := s.Containers[0].Logs
	if strings.Join(l.Lines, "|") != "hello 1|hello 2|hello 3" || l.Every.D() != 2*time.Second || l.Count != 3 || l.Stream != "" {
		t.Errorf("logs = %+v", l)
	}
}

// A log read in pieces: each read takes the complete lines added since the last, joins a partial
// line to the next of its stream, and keeps what it read once the file is gone.
func TestLogTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	line := func(sec int, stream, tag, text string) string {
		return start.Add(time.Duration(sec)*time.Second).Format(time.RFC3339Nano) + " " + stream + " " + tag + " " + text + "\n"
	}
	var tail logTail
	os.WriteFile(path, []byte(line(1, "stdout", "F", "one")+line(2, "stdout", "P", "tw")+"2025-01-01T00:00:02Z std"), 0o644)
	tail.read(path)
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0o644)
	f.WriteString(line(1, "stdout", "F", "one") + line(2, "stdout", "P", "tw") + line(2, "stdout", "F", "o") + line(3, "stderr", "F", "oops") + line(4, "stdout", "F", "three"))
	f.Close()
	tail.read(path)
	os.Remove(path)
	tail.read(path)
	got := tail.spec(start)
	if got == nil || strings.Join(got.Lines, "|") != "one|two|three" || got.Every.D() != 1333*time.Millisecond || got.Count != 3 || got.Stream != "" {
		t.Errorf("spec = %+v", got)
	}
	if (&logTail{}).spec(start) != nil {
		t.Error("a log with no line gives a spec")
	}
}
