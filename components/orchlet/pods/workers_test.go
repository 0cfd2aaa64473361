package pods

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/pods/labels"
	"orch.io/orch/fakecri/calllog"
	fakescript "orch.io/orch/fakecri/script"
)

// gatedRuntime holds each RunPodSandbox until want of them are in flight at once (or the last
// pod's has started), and records the most calls in flight at once, overall and for one pod.
type gatedRuntime struct {
	cri.RuntimeService
	want, total int

	mu         sync.Mutex
	inFlight   int
	started    int
	maxAtOnce  int
	timedOut   bool
	byPod      map[string]int
	maxOnePod  int
	sandboxPod map[string]string
}

func (g *gatedRuntime) enter(uid string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.byPod[uid]++
	g.maxOnePod = max(g.maxOnePod, g.byPod[uid])
}

func (g *gatedRuntime) leave(uid string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.byPod[uid]--
}

func (g *gatedRuntime) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	uid := cfg.Metadata.Uid
	g.enter(uid)
	defer g.leave(uid)
	g.mu.Lock()
	g.inFlight++
	g.started++
	g.maxAtOnce = max(g.maxAtOnce, g.inFlight)
	g.mu.Unlock()
	// A wall-clock bound, so that a manager that never runs want sandboxes at once fails the
	// test rather than hangs it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		g.mu.Lock()
		open := g.maxAtOnce >= g.want || g.started == g.total
		if !open && time.Now().After(deadline) {
			g.timedOut, open = true, true
		}
		g.mu.Unlock()
		if open {
			break
		}
		time.Sleep(time.Millisecond)
	}
	id, err := g.RuntimeService.RunPodSandbox(ctx, cfg, handler)
	g.mu.Lock()
	g.inFlight--
	g.sandboxPod[id] = uid
	g.mu.Unlock()
	return id, err
}

func (g *gatedRuntime) CreateContainer(ctx context.Context, sandbox string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	g.enter(sbCfg.Metadata.Uid)
	defer g.leave(sbCfg.Metadata.Uid)
	return g.RuntimeService.CreateContainer(ctx, sandbox, cfg, sbCfg)
}

func (g *gatedRuntime) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	if uid := f.GetLabelSelector()[labels.PodUID]; uid != "" {
		g.enter(uid)
		defer g.leave(uid)
	}
	return g.RuntimeService.ListContainers(ctx, f)
}

func (g *gatedRuntime) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	g.mu.Lock()
	uid := g.sandboxPod[id]
	g.mu.Unlock()
	g.enter(uid)
	defer g.leave(uid)
	return g.RuntimeService.PodSandboxStatus(ctx, id, verbose)
}

// TestWorkersSyncPodsAtOnce: with Workers set, Step brings several pods up at once, no more than
// Workers of them, and never two calls for one pod at a time; without, one call at a time.
func TestWorkersSyncPodsAtOnce(t *testing.T) {
	cases := []struct {
		name             string
		workers, pods    int
		wantAtOnce       int
		wantSandboxCalls int
	}{
		{"no workers: one pod at a time", 0, 4, 1, 4},
		{"4 workers, 4 pods: all at once", 4, 4, 4, 4},
		{"4 workers, 7 pods: 4 at once at most", 4, 7, 4, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var g *gatedRuntime
			h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"app:1"}}}, config(nil), func(o *Options) {
				o.Workers = tc.workers
				g = &gatedRuntime{RuntimeService: o.Runtime, want: tc.wantAtOnce, total: tc.pods, byPod: map[string]int{}, sandboxPod: map[string]string{}}
				o.Runtime = g
			})
			for i := range tc.pods {
				h.add(newPod(fmt.Sprintf("p%d", i), ctr("app", "app:1")))
			}
			h.runUntil(5 * time.Second)

			if g.timedOut {
				t.Errorf("RunPodSandbox never had %d calls in flight at once", tc.wantAtOnce)
			}
			if g.maxAtOnce != tc.wantAtOnce {
				t.Errorf("most RunPodSandbox calls at once = %d, want %d", g.maxAtOnce, tc.wantAtOnce)
			}
			if g.maxOnePod != 1 {
				t.Errorf("most calls at once for one pod = %d, want 1", g.maxOnePod)
			}
			if n := len(h.calls("RunPodSandbox", "")); n != tc.wantSandboxCalls {
				t.Errorf("RunPodSandbox calls = %d, want %d", n, tc.wantSandboxCalls)
			}
			for _, p := range h.m.Pods() {
				if p.Status.Phase != corev1.PodRunning {
					t.Errorf("pod %s is %s, want Running", p.Name, p.Status.Phase)
				}
			}
			if n := len(h.m.Pods()); n != tc.pods {
				t.Errorf("pods = %d, want %d", n, tc.pods)
			}
		})
	}
}

// TestWorkersDoWhatOneLoopDoes: the pod workers make the same calls, events and statuses as the
// single loop, orders apart, through crash loops, probes, and a pod's removal.
func TestWorkersDoWhatOneLoopDoes(t *testing.T) {
	run := func(workers int) (calls, events []string, pods []string) {
		h := newHarness(t, crashing(3*time.Second, 2), config(nil), func(o *Options) { o.Workers = workers })
		live := ctr("live", "app:1")
		live.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 5}
		gone := newPod("gone", ctr("web", "app:1"))
		h.add(newPod("a", ctr("app", "app:1")), newPod("b", live, ctr("app", "app:1")), newPod("c", ctr("web", "app:1")), gone)
		h.runUntil(time.Minute)
		h.remove(gone)
		h.runUntil(2 * time.Minute)
		for _, c := range h.rt.Calls(calllog.Filter{}) {
			calls = append(calls, fmt.Sprintf("%v %s", c.Start.Sub(t0), c.Method))
		}
		for _, p := range h.m.Pods() {
			var restarts []int32
			for _, cs := range p.Status.ContainerStatuses {
				restarts = append(restarts, cs.RestartCount)
			}
			pods = append(pods, fmt.Sprintf("%s %s %v", p.Name, p.Status.Phase, restarts))
		}
		events = h.rec.lines()
		slices.Sort(calls)
		slices.Sort(events)
		return calls, events, pods
	}
	c1, e1, p1 := run(1)
	c4, e4, p4 := run(4)
	if !slices.Equal(c1, c4) {
		t.Errorf("calls differ:\none loop %v\nworkers  %v", c1, c4)
	}
	if !slices.Equal(e1, e4) {
		t.Errorf("events differ:\none loop %v\nworkers  %v", e1, e4)
	}
	if !slices.Equal(p1, p4) || len(p1) != 3 {
		t.Errorf("pods differ:\none loop %v\nworkers  %v", p1, p4)
	}
	if len(c1) < 50 {
		t.Fatalf("too few calls to prove anything: %v", c1)
	}
}

// heldRuntime holds the slow pod's RunPodSandbox until the fast pod's container was created (or
// a wall-clock bound passed).
type heldRuntime struct {
	cri.RuntimeService
	slow, fast string
	created    chan struct{}
	once       sync.Once
	timedOut   bool
}

func (r *heldRuntime) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	if cfg.Metadata.Uid == r.slow {
		select {
		case <-r.created:
		case <-time.After(10 * time.Second):
			r.timedOut = true
		}
	}
	return r.RuntimeService.RunPodSandbox(ctx, cfg, handler)
}

func (r *heldRuntime) CreateContainer(ctx context.Context, sandbox string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	id, err := r.RuntimeService.CreateContainer(ctx, sandbox, cfg, sbCfg)
	if sbCfg.Metadata.Uid == r.fast {
		r.once.Do(func() { close(r.created) })
	}
	return id, err
}

// TestWorkersDoNotWaitForEachOther: a pod goes on to its containers as soon as its own sandbox is
// up, while another pod's sandbox is still being made; and an update of a pod being synced (its
// removal) is applied once its worker is done.
func TestWorkersDoNotWaitForEachOther(t *testing.T) {
	var r *heldRuntime
	h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"app:1"}}}, config(nil), func(o *Options) {
		o.Workers = 4
		r = &heldRuntime{RuntimeService: o.Runtime, slow: "uid-slow", fast: "uid-fast", created: make(chan struct{})}
		o.Runtime = r
	})
	slow := newPod("slow", ctr("app", "app:1"))
	h.add(slow, newPod("fast", ctr("app", "app:1")))
	done := make(chan struct{})
	go func() {
		h.m.Step(h.ctx)
		close(done)
	}()
	// The slow pod's removal arrives while its worker waits in RunPodSandbox.
	<-r.created
	h.remove(slow)
	<-done
	h.runUntil(10 * time.Second)
	if r.timedOut {
		t.Fatal("the slow pod's sandbox held up the fast pod's containers")
	}
	if pods := h.m.Pods(); len(pods) != 1 || pods[0].Name != "fast" || pods[0].Status.Phase != corev1.PodRunning {
		t.Errorf("pods = %v, want fast Running alone", pods)
	}
	for _, s := range h.sandboxes() {
		if s.Metadata.Name == "slow" && s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			t.Errorf("the removed pod's sandbox is still ready")
		}
	}
	if n := len(h.calls("RemovePodSandbox", "")); n != 1 {
		t.Errorf("RemovePodSandbox calls = %d, want 1 (the removed pod torn down)", n)
	}
}

// countingImages records the most PullImage calls in flight at once; each takes a little wall
// time so that pulls that may overlap do.
type countingImages struct {
	cri.ImageManagerService
	mu             sync.Mutex
	inFlight, most int
}

func (c *countingImages) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	c.mu.Lock()
	c.inFlight++
	c.most = max(c.most, c.inFlight)
	c.mu.Unlock()
	time.Sleep(100 * time.Millisecond)
	defer func() {
		c.mu.Lock()
		c.inFlight--
		c.mu.Unlock()
	}()
	return c.ImageManagerService.PullImage(ctx, image, auth, sbCfg)
}

// TestWorkersKeepSerializeImagePulls: the pod workers pull one image at a time with
// serializeImagePulls, several at once without.
func TestWorkersKeepSerializeImagePulls(t *testing.T) {
	for _, tc := range []struct {
		serialize bool
		want      int
	}{{true, 1}, {false, 3}} {
		t.Run(fmt.Sprintf("serializeImagePulls=%v", tc.serialize), func(t *testing.T) {
			var imgs *countingImages
			cfg := config(func(c *v1beta1.OrchletConfiguration) { c.SerializeImagePulls = tc.serialize })
			h := newHarness(t, &fakescript.Script{}, cfg, func(o *Options) {
				o.Workers = 4
				imgs = &countingImages{ImageManagerService: o.Images}
				o.Images = imgs
			})
			h.add(newPod("a", ctr("app", "a:1")), newPod("b", ctr("app", "b:1")), newPod("c", ctr("app", "c:1")))
			h.runUntil(5 * time.Second)
			if imgs.most != tc.want {
				t.Errorf("most pulls at once = %d, want %d", imgs.most, tc.want)
			}
			if n := len(h.calls("PullImage", "")); n != 3 {
				t.Errorf("PullImage calls = %d, want 3", n)
			}
			for _, p := range h.m.Pods() {
				if p.Status.Phase != corev1.PodRunning {
					t.Errorf("pod %s is %s, want Running", p.Name, p.Status.Phase)
				}
			}
		})
	}
}
