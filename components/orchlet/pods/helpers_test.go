package pods

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	cri "k8s.io/cri-api/pkg/apis"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/featuregates"
	"orch.io/orch/components/orchlet/sources"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/fakecritest"
	fakescript "orch.io/orch/fakecri/script"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// event is one recorded event, stamped with the clock.
type event struct {
	at                   time.Duration // since t0
	kind, reason, object string
	note                 string
}

type fakeRecorder struct {
	clk clock.Clock
	mu  sync.Mutex
	all []event
}

func (r *fakeRecorder) Eventf(ref *corev1.ObjectReference, eventType, reason, action, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	obj := ref.Namespace + "/" + ref.Name
	if ref.FieldPath != "" {
		obj += "/" + ref.FieldPath
	}
	r.all = append(r.all, event{at: r.clk.Now().Sub(t0), kind: eventType, reason: reason, object: obj, note: fmt.Sprintf(format, args...)})
}

func (r *fakeRecorder) reasons(reason string) []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event
	for _, e := range r.all {
		if e.reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func (r *fakeRecorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.all {
		out = append(out, fmt.Sprintf("%v %s %s %s: %s", e.at, e.kind, e.reason, e.object, e.note))
	}
	return out
}

// harness runs a Manager against fakecri on a unix socket, through Kubernetes' CRI client, on a
// clock.Mock.
type harness struct {
	t    *testing.T
	ctx  context.Context
	mock *clock.Mock
	rt   *fakecri.Runtime
	rs   cri.RuntimeService      // the agent's client of rt
	is   cri.ImageManagerService // and of its images
	m    *Manager
	rec  *fakeRecorder
}

func config(mod func(*v1beta1.OrchletConfiguration)) *v1beta1.OrchletConfiguration {
	c := &v1beta1.OrchletConfiguration{}
	c.RuntimeRequestTimeout.Duration = 2 * time.Minute
	c.SyncFrequency.Duration = time.Minute
	c.MaxPods = 110
	c.SerializeImagePulls = true
	c.RegistryPullQPS = 5
	c.RegistryBurst = 10
	if mod != nil {
		mod(c)
	}
	return c
}

func newHarness(t *testing.T, script *fakescript.Script, cfg *v1beta1.OrchletConfiguration, mod func(*Options)) *harness {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	mock := clock.NewMock()
	mock.Set(t0)
	rt, sock := fakecritest.Start(t, fakecri.Options{Clock: mock, Seed: 1, Script: script})
	rs, is, err := Connect(ctx, sock, "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rec := &fakeRecorder{clk: mock}
	o := Options{Clock: mock, Runtime: rs, Images: is, Recorder: rec, Config: cfg, Cores: 2}
	if mod != nil {
		mod(&o)
	}
	if o.Gates == nil {
		o.Gates = gatesOf(t, o.Config)
	}
	if o.Node.RootDir == "" {
		o.Node.RootDir = t.TempDir()
	}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	rt.ResetCalls() // the client's connection check is not the agent's doing
	return &harness{t: t, ctx: ctx, mock: mock, rt: rt, rs: rs, is: is, m: m, rec: rec}
}

// step runs one Step as a simulator must: in a goroutine, moving the clock while the Step is
// blocked on a CRI call that the runtime holds until a later time.
func (h *harness) step() {
	done := make(chan struct{})
	go func() {
		h.m.Step(h.ctx)
		close(done)
	}()
	for {
		select {
		case <-done:
			return
		case <-h.ctx.Done():
			h.t.Fatal("step did not finish")
		default:
		}
		if deadline, ok := h.parked(); ok {
			now := h.mock.Now()
			if deadline.IsZero() || deadline.After(now) {
				next := deadline
				if w, ok := h.rt.NextWakeup(); ok && (next.IsZero() || w.Before(next)) {
					next = w
				}
				if !next.IsZero() {
					h.moveParked(next, deadline)
					continue
				}
			}
		}
		time.Sleep(20 * time.Microsecond)
	}
}

// moveParked moves the clock to next while Step is parked. When that reaches the call's deadline
// the agent gives up on the call, but fakecri ends it only once the cancellation has crossed the
// socket: until then it would pass for the Step's next call, so this waits for it to end.
func (h *harness) moveParked(next, deadline time.Time) {
	var parked uint64
	cancelling := !deadline.IsZero() && !next.Before(deadline)
	if cancelling {
		for _, c := range h.rt.Calls(calllog.Filter{}) {
			if c.End.IsZero() {
				parked = c.Seq
			}
		}
	}
	h.mock.Set(next)
	for cancelling {
		cancelling = false
		for _, c := range h.rt.Calls(calllog.Filter{}) {
			if c.Seq == parked && c.End.IsZero() {
				cancelling = true
			}
		}
		select {
		case <-h.ctx.Done():
			h.t.Fatal("the runtime never ended a cancelled call")
		case <-time.After(20 * time.Microsecond):
		}
	}
}

// parked reports whether Step's current call is in the runtime, waiting for a later time or its
// deadline, and returns the deadline. No call starting or ending while the runtime is looked at
// makes sure the runtime's one call in flight is this call.
func (h *harness) parked() (time.Time, bool) {
	c := h.m.Calls()
	if !c.InStep || c.InFlight != 1 || h.rt.InFlight() != 1 || !h.rt.Idle() || h.rt.InFlight() != 1 {
		return time.Time{}, false
	}
	select {
	case <-c.Changed:
		return time.Time{}, false
	default:
		return c.StepDeadline, true
	}
}

// caughtUp waits until the runtime has finished every call the Manager is no longer making: a
// call the agent gave up on at its deadline ends in fakecri only when the cancellation crosses the
// socket, and the clock must not move before, or fakecri would stamp the end at a later time.
func (h *harness) caughtUp() {
	for h.rt.InFlight() != h.m.Calls().InFlight || !h.rt.Idle() {
		select {
		case <-h.ctx.Done():
			h.t.Fatal("the runtime never caught up with the agent's calls")
		case <-time.After(20 * time.Microsecond):
		}
	}
}

// runUntil steps and advances the clock to each next deadline until d has passed since t0.
func (h *harness) runUntil(d time.Duration) {
	fakecritest.RunUntil(h.t, h.ctx, h.rt, h.mock, t0.Add(d), h.step, func() (time.Time, bool) {
		h.caughtUp()
		return h.m.NextDeadline()
	})
}

func (h *harness) add(pods ...*corev1.Pod) {
	for _, p := range pods {
		h.m.Update(sources.Update{Op: sources.OpAdd, Source: sources.SourceFile, Pod: p})
	}
}

func (h *harness) remove(p *corev1.Pod) {
	h.m.Update(sources.Update{Op: sources.OpRemove, Source: sources.SourceFile, Pod: p})
}

// calls returns the runtime's calls of a method, optionally only those whose request has part.
func (h *harness) calls(method, part string) []calllog.Call {
	var out []calllog.Call
	for _, c := range h.rt.Calls(calllog.Filter{Method: method}) {
		if strings.Contains(c.Request, part) {
			out = append(out, c)
		}
	}
	return out
}

// starts returns when calls began, as durations since t0.
func starts(cs []calllog.Call) []time.Duration {
	out := []time.Duration{}
	for _, c := range cs {
		out = append(out, c.Start.Sub(t0))
	}
	return out
}

func (h *harness) pod(name string) corev1.Pod {
	h.t.Helper()
	for _, p := range h.m.Pods() {
		if p.Name == name {
			return p
		}
	}
	h.t.Fatalf("pod %s not listed", name)
	return corev1.Pod{}
}

func (h *harness) sandboxes() []*runtimeapi.PodSandbox {
	resp, err := h.rt.ListPodSandbox(h.ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.Items
}

func (h *harness) containers() []*runtimeapi.Container {
	resp, err := h.rt.ListContainers(h.ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.Containers
}

func newPod(name string, containers ...corev1.Container) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), Labels: map[string]string{"app": name}},
		Spec:       corev1.PodSpec{Containers: containers},
	}
}

func ctr(name, image string) corev1.Container {
	return corev1.Container{Name: name, Image: image}
}

func dur(d time.Duration) fakescript.Duration { return fakescript.Duration(d) }

// sandboxConfig and containerConfig are the configs the pod workers' sync sends for a pod.
func (m *Manager) sandboxConfig(pod *corev1.Pod, attempt uint32) *runtimeapi.PodSandboxConfig {
	return m.syncer.SandboxConfig(pod, attempt)
}

func (m *Manager) containerConfig(ctx context.Context, p *podState, c *corev1.Container, imageRef string, attempt uint32) (*runtimeapi.ContainerConfig, error) {
	return m.syncer.ContainerConfig(ctx, p.PodState, c, imageRef, attempt)
}

// gatesOf parses cfg's feature gates, as the agent's caller does once.
func gatesOf(t testing.TB, cfg *v1beta1.OrchletConfiguration) *featuregates.Gates {
	t.Helper()
	g, err := featuregates.New(cfg.FeatureGates)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
