package containergc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/events/eventstest"
	"orch.io/orch/components/orchlet/pods"
	"orch.io/orch/components/orchlet/pods/labels"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/fakecritest"
	"orch.io/orch/fakecri/script"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// known is the pods the agent still has.
type known struct {
	mu   sync.Mutex
	uids map[types.UID]bool
}

func (k *known) ShouldPodContentBeRemoved(uid types.UID) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return !k.uids[uid]
}

type harness struct {
	t     *testing.T
	ctx   context.Context
	mock  *clock.Mock
	rt    *fakecri.Runtime
	rs    cri.RuntimeService
	m     *Manager
	rec   *eventstest.Recorder
	pods  *known
	logs  string
	ready bool
	sbs   map[string]string // pod name -> sandbox id
	cfgs  map[string]*runtimeapi.PodSandboxConfig
	// attempts counts each pod's sandboxes, whose names the runtime reserves per attempt.
	attempts map[string]int
}

func newHarness(t *testing.T, p Policy) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	mock := clock.NewMock()
	mock.Set(t0)
	script, err := script.Parse([]byte(`node: {preloadImages: ["app:1"]}`))
	if err != nil {
		t.Fatal(err)
	}
	rt, sock := fakecritest.Start(t, fakecri.Options{Clock: mock, Seed: 1, Script: script})
	rs, is, err := pods.Connect(ctx, sock, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, ctx: ctx, mock: mock, rt: rt, rs: rs, rec: &eventstest.Recorder{}, pods: &known{uids: map[types.UID]bool{}},
		logs: t.TempDir(), ready: true, sbs: map[string]string{}, attempts: map[string]int{}, cfgs: map[string]*runtimeapi.PodSandboxConfig{}}
	h.m, err = New(Options{Clock: mock, Runtime: rs, Images: is, Pods: h.pods, Recorder: h.rec, NodeName: "node-a", PodLogsDir: h.logs,
		SourcesReady: func() bool { return h.ready }, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// sandbox starts a sandbox for the pod (uid "uid-<pod>", known to the agent) with its log directory.
func (h *harness) sandbox(pod string) string {
	h.t.Helper()
	uid := "uid-" + pod
	dir := filepath.Join(h.logs, "default_"+pod+"_"+uid)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		h.t.Fatal(err)
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod, Namespace: "default", Uid: uid, Attempt: uint32(h.attempts[pod])},
		Labels:       map[string]string{labels.PodUID: uid, labels.PodName: pod, labels.PodNamespace: "default"},
		LogDirectory: dir,
	}
	id, err := h.rs.RunPodSandbox(h.ctx, cfg, "")
	if err != nil {
		h.t.Fatal(err)
	}
	h.sbs[pod], h.cfgs[pod] = id, cfg
	h.attempts[pod]++
	h.pods.mu.Lock()
	h.pods.uids[types.UID(uid)] = true
	h.pods.mu.Unlock()
	return id
}

// dead makes n instances of the pod's container name, a second apart, each run and exited; the
// returned ids are oldest first. With running, the last one keeps running.
func (h *harness) dead(pod, name string, n int, running bool) []string {
	h.t.Helper()
	if h.sbs[pod] == "" {
		h.sandbox(pod)
	}
	var ids []string
	for i := 0; i < n; i++ {
		h.mock.Add(time.Second)
		cfg := &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name, Attempt: uint32(i)},
			Image:    &runtimeapi.ImageSpec{Image: "app:1"},
			Labels:   map[string]string{labels.PodUID: "uid-" + pod, labels.ContainerName: name},
			LogPath:  fmt.Sprintf("%s/%d.log", name, i),
		}
		id, err := h.rs.CreateContainer(h.ctx, h.sbs[pod], cfg, h.cfgs[pod])
		if err != nil {
			h.t.Fatal(err)
		}
		if err := h.rs.StartContainer(h.ctx, id); err != nil {
			h.t.Fatal(err)
		}
		if !running || i < n-1 {
			if err := h.rs.StopContainer(h.ctx, id, 0); err != nil {
				h.t.Fatal(err)
			}
		}
		ids = append(ids, id)
	}
	return ids
}

// left is the containers the runtime still has, as "pod/name#attempt", sorted.
func (h *harness) left() []string {
	h.t.Helper()
	cs, err := h.rs.ListContainers(h.ctx, nil)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, c := range cs {
		out = append(out, fmt.Sprintf("%s/%s#%d", strings.TrimPrefix(c.Labels[labels.PodUID], "uid-"), c.Metadata.Name, c.Metadata.Attempt))
	}
	sort.Strings(out)
	return out
}

func TestContainerCaps(t *testing.T) {
	// Pod p has 4 dead "a" and 2 dead "b"; pod q has 3 dead "a"; r runs one "a" after 2 dead ones.
	for _, tc := range []struct {
		name   string
		policy Policy
		want   []string
	}{
		{"the default: one dead instance per container", Policy{MaxPerPodContainer: 1, MaxContainers: -1},
			[]string{"p/a#3", "p/b#1", "q/a#2", "r/a#1", "r/a#2"}},
		{"no caps keep everything", Policy{MaxPerPodContainer: -1, MaxContainers: -1},
			[]string{"p/a#0", "p/a#1", "p/a#2", "p/a#3", "p/b#0", "p/b#1", "q/a#0", "q/a#1", "q/a#2", "r/a#0", "r/a#1", "r/a#2"}},
		{"zero per container removes every dead one", Policy{MaxPerPodContainer: 0, MaxContainers: -1},
			[]string{"r/a#2"}},
		{"two per container", Policy{MaxPerPodContainer: 2, MaxContainers: -1},
			[]string{"p/a#2", "p/a#3", "p/b#0", "p/b#1", "q/a#1", "q/a#2", "r/a#0", "r/a#1", "r/a#2"}},
		// 11 dead in 4 units: 8/4 = 2 each leaves 8, the cap.
		{"a global cap spread across units", Policy{MaxPerPodContainer: -1, MaxContainers: 8},
			[]string{"p/a#2", "p/a#3", "p/b#0", "p/b#1", "q/a#1", "q/a#2", "r/a#0", "r/a#1", "r/a#2"}},
		// 5/4 = 1 each leaves 4 (< 5): nothing more goes.
		{"a global cap of one each", Policy{MaxPerPodContainer: -1, MaxContainers: 5},
			[]string{"p/a#3", "p/b#1", "q/a#2", "r/a#1", "r/a#2"}},
		// 2/4 < 1: one each (4), then the oldest two on the node: p/b#1 and q/a#2 are the oldest of the four.
		{"a global cap below the units, then the oldest go", Policy{MaxPerPodContainer: -1, MaxContainers: 2},
			[]string{"p/a#3", "r/a#1", "r/a#2"}},
		{"a global cap of zero", Policy{MaxPerPodContainer: 1, MaxContainers: 0},
			[]string{"r/a#2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.policy)
			h.dead("p", "b", 2, false)
			h.dead("q", "a", 3, false)
			h.dead("p", "a", 4, false)
			h.dead("r", "a", 3, true)
			h.m.Step(h.ctx)
			if got := h.left(); !slices.Equal(got, tc.want) {
				t.Fatalf("left %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMinimumContainerAge(t *testing.T) {
	h := newHarness(t, Policy{MinAge: time.Minute, MaxPerPodContainer: 0, MaxContainers: -1})
	h.dead("p", "a", 2, false) // created at 1s and 2s
	h.m.Step(h.ctx)
	if got := h.left(); len(got) != 2 {
		t.Fatalf("left %v: younger than the minimum age, both stay", got)
	}
	h.mock.Add(time.Minute + time.Second) // 1m3s: the first is 62s old, the second 61s
	h.m.Step(h.ctx)
	if got := h.left(); len(got) != 0 {
		t.Fatalf("left %v: old enough, both go", got)
	}
	if _, err := New(Options{Clock: h.mock, Runtime: h.rs, Images: h.m.o.Images, Pods: h.pods, Recorder: h.rec, NodeName: "n", Policy: Policy{MinAge: -time.Second}}); err == nil ||
		err.Error() != "containergc: invalid minimum garbage collection age: -1s" {
		t.Fatalf("a negative minimum age: %v", err)
	}
}

func TestPeriod(t *testing.T) {
	h := newHarness(t, Policy{MaxPerPodContainer: 1, MaxContainers: -1})
	h.m.Step(h.ctx) // at 0
	h.dead("p", "a", 3, false)
	h.m.Step(h.ctx) // at 3s: not due
	if got := h.left(); len(got) != 3 {
		t.Fatalf("collected before the period: %v", got)
	}
	if next, _ := h.m.NextDeadline(); !next.Equal(t0.Add(Period)) {
		t.Fatalf("next collection at %v, want %v", next, t0.Add(Period))
	}
	h.mock.Set(t0.Add(Period))
	h.m.Step(h.ctx)
	if got := h.left(); len(got) != 1 {
		t.Fatalf("left %v after the period", got)
	}
}

func TestGonePods(t *testing.T) {
	h := newHarness(t, Policy{MaxPerPodContainer: 5, MaxContainers: -1})
	h.dead("gone", "a", 2, false)
	h.dead("kept", "a", 2, false)
	// The gone pod's sandbox stopped and the agent forgot it; a stray directory of another gone pod.
	if err := h.rs.StopPodSandbox(h.ctx, h.sbs["gone"]); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(h.logs, "default_old_uid-old", "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.pods.mu.Lock()
	delete(h.pods.uids, "uid-gone")
	h.pods.mu.Unlock()

	h.ready = false
	h.m.Step(h.ctx)
	if got := h.left(); len(got) != 4 {
		t.Fatalf("left %v: before the sources are ready no pod is gone", got)
	}
	if _, err := os.Stat(filepath.Join(h.logs, "default_old_uid-old")); err != nil {
		t.Fatal("a log directory went before the sources were ready")
	}

	h.ready = true
	h.mock.Add(Period)
	h.m.Step(h.ctx)
	if got, want := h.left(), []string{"kept/a#0", "kept/a#1"}; !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
	sbs, err := h.rs.ListPodSandbox(h.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sbs) != 1 || sbs[0].Id != h.sbs["kept"] {
		t.Fatalf("sandboxes %v: the gone pod's goes, the kept one's stays", sbs)
	}
	dirs, _ := os.ReadDir(h.logs)
	var names []string
	for _, d := range dirs {
		names = append(names, d.Name())
	}
	if want := []string{"default_kept_uid-kept"}; !slices.Equal(names, want) {
		t.Fatalf("log directories %v, want %v", names, want)
	}
}

func TestDeadSandboxes(t *testing.T) {
	// A pod whose sandbox was replaced twice: the two old ones are dead and empty; the newest stays.
	h := newHarness(t, Policy{MaxPerPodContainer: 1, MaxContainers: -1})
	first := h.sandbox("p")
	if err := h.rs.StopPodSandbox(h.ctx, first); err != nil {
		t.Fatal(err)
	}
	h.mock.Add(time.Second)
	second := h.sandbox("p")
	h.dead("p", "a", 1, false) // the second holds a dead container: active
	h.mock.Add(time.Second)
	if err := h.rs.StopPodSandbox(h.ctx, second); err != nil {
		t.Fatal(err)
	}
	third := h.sandbox("p")
	if err := h.rs.StopPodSandbox(h.ctx, third); err != nil {
		t.Fatal(err)
	}
	h.m.Step(h.ctx)
	sbs, err := h.rs.ListPodSandbox(h.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range sbs {
		ids = append(ids, s.Id)
	}
	sort.Strings(ids)
	want := []string{second, third}
	sort.Strings(want)
	if !slices.Equal(ids, want) {
		t.Fatalf("sandboxes %v, want the one with a container and the newest %v", ids, want)
	}
}

func TestFailureIsAnEvent(t *testing.T) {
	h := newHarness(t, Policy{MaxPerPodContainer: 1, MaxContainers: -1})
	h.m.o.PodLogsDir = filepath.Join(h.logs, "file")
	if err := os.WriteFile(h.m.o.PodLogsDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.m.Step(h.ctx)
	if len(h.rec.Events()) != 1 || !strings.HasPrefix(h.rec.Events()[0], "Warning ContainerGCFailed Node/node-a: failed to read podLogsDirectory") {
		t.Fatalf("events %q", h.rec.Events())
	}
}

func TestDeleteAllUnusedContainers(t *testing.T) {
	h := newHarness(t, Policy{MaxPerPodContainer: 1, MaxContainers: -1})
	h.dead("p", "a", 3, false)
	if err := h.m.DeleteAllUnusedContainers(h.ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := h.left(), []string{"p/a#2"}; !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
}

func TestIsContainerFsSeparateFromImageFs(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   bool
	}{
		{`node: {containerFs: imagefs}`, false},
		{`node: {containerFs: rootfs}`, true},
	} {
		script, err := script.Parse([]byte(tc.script))
		if err != nil {
			t.Fatal(err)
		}
		h := newHarness(t, Policy{MaxPerPodContainer: 1, MaxContainers: -1})
		if err := h.rt.SetScript(script); err != nil {
			t.Fatal(err)
		}
		if got := h.m.IsContainerFsSeparateFromImageFs(h.ctx); got != tc.want {
			t.Errorf("%s: separate = %t, want %t", tc.script, got, tc.want)
		}
	}
}
