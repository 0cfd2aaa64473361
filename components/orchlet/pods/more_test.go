package pods

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/pods/images"
	"orch.io/orch/components/orchlet/pods/podsync"
	"orch.io/orch/components/orchlet/pods/prober"
	"orch.io/orch/fakecri/calllog"
	fakescript "orch.io/orch/fakecri/script"
)

// sick answers httpGet and tcpSocket probes: healthy until 30s after t0, then failing.
type sick struct {
	clk  clock.Clock
	mu   sync.Mutex
	seen []string
}

func (s *sick) healthy(target string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, target)
	return s.clk.Now().Before(t0.Add(30 * time.Second))
}

func (s *sick) Do(req *http.Request) (*http.Response, error) {
	code := http.StatusOK
	if !s.healthy(req.URL.String()) {
		code = http.StatusInternalServerError
	}
	return &http.Response{StatusCode: code, Body: io.NopCloser(strings.NewReader(""))}, nil
}

func (s *sick) Dial(_ context.Context, network, addr string) (net.Conn, error) {
	if !s.healthy(network + "://" + addr) {
		return nil, errors.New("connection refused")
	}
	a, b := net.Pipe()
	b.Close()
	return a, nil
}

func TestLivenessProbeFailureRestarts(t *testing.T) {
	cases := []struct {
		name   string
		probe  corev1.ProbeHandler
		target string
	}{
		{"exec", corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"check"}}}, ""},
		{"httpGet", corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")}}, "http://10.88.0.2:8080/healthz"},
		{"tcpSocket", corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, "tcp://10.88.0.2:8080"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			script := &fakescript.Script{
				Node: fakescript.NodeScript{PreloadImages: []string{"app:1"}},
				Exec: []fakescript.ExecRule{{Command: "check", From: dur(30 * time.Second), ExitCode: 1, Stdout: "unwell"}},
			}
			var s *sick
			h := newHarness(t, script, config(nil), func(o *Options) {
				s = &sick{clk: o.Clock}
				o.HTTP, o.Dial = s, s.Dial
			})
			c := ctr("app", "app:1")
			c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
			c.LivenessProbe = &corev1.Probe{ProbeHandler: tc.probe, InitialDelaySeconds: 10, PeriodSeconds: 5, FailureThreshold: 3}
			h.add(newPod("p", c))
			h.runUntil(45 * time.Second)

			unhealthy := h.rec.reasons(prober.ReasonUnhealthy)
			var at []time.Duration
			for _, e := range unhealthy {
				at = append(at, e.at)
			}
			if want := []time.Duration{30 * time.Second, 35 * time.Second, 40 * time.Second}; !slices.Equal(at, want) {
				t.Errorf("Unhealthy events at %v, want %v", at, want)
			}
			if tc.name == "exec" && (len(unhealthy) == 0 || unhealthy[0].note != "Liveness probe failed: unwell") {
				t.Errorf("Unhealthy events = %+v, want the note Kubernetes writes: the command's output", unhealthy)
			}
			killing := h.rec.reasons(podsync.ReasonKilling)
			if len(killing) != 1 || killing[0].at != 40*time.Second || !strings.Contains(killing[0].note, "failed liveness probe") {
				t.Errorf("Killing events = %+v", killing)
			}
			if got := starts(h.calls("StopContainer", "timeout=30")); !slices.Equal(got, []time.Duration{40 * time.Second}) {
				t.Errorf("StopContainer at %v, want [40s]", got)
			}
			if got := starts(h.calls("StartContainer", "")); !slices.Equal(got, []time.Duration{0, 40 * time.Second}) {
				t.Errorf("StartContainer at %v, want [0s 40s]", got)
			}
			if tc.target != "" && (len(s.seen) == 0 || s.seen[0] != tc.target) {
				t.Errorf("probed %v, want %s", s.seen, tc.target)
			}
			if tc.name == "exec" {
				if got := starts(h.calls("ExecSync", "timeout=1")); len(got) == 0 || got[0] != 10*time.Second {
					t.Errorf("ExecSync at %v, want the first at 10s with timeoutSeconds 1", got)
				}
			}
		})
	}
}

func TestMaxPods(t *testing.T) {
	cases := []struct {
		name        string
		maxPods     int32
		podsPerCore int32
		admitted    []string
	}{
		{"max-pods caps", 2, 0, []string{"a", "b"}},
		{"pods-per-core x cores caps below max-pods", 110, 1, []string{"a", "b"}},
		{"max-pods caps below pods-per-core x cores", 1, 5, []string{"a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(func(c *v1beta1.OrchletConfiguration) { c.MaxPods, c.PodsPerCore = tc.maxPods, tc.podsPerCore })
			h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"app:1"}}}, cfg, nil)
			a, b, c := newPod("a", ctr("app", "app:1")), newPod("b", ctr("app", "app:1")), newPod("c", ctr("app", "app:1"))
			h.add(a, b, c)
			h.runUntil(5 * time.Second)
			var ran []string
			for _, call := range h.calls("RunPodSandbox", "") {
				ran = append(ran, strings.TrimPrefix(strings.Fields(call.Request)[0], "name="))
			}
			if !slices.Equal(ran, tc.admitted) {
				t.Errorf("sandboxes for %v, want %v", ran, tc.admitted)
			}
			for _, name := range []string{"a", "b", "c"} {
				st := h.pod(name).Status
				if slices.Contains(tc.admitted, name) {
					if st.Phase != corev1.PodRunning {
						t.Errorf("%s: phase %s, want Running", name, st.Phase)
					}
					continue
				}
				if st.Phase != corev1.PodFailed || st.Reason != ReasonOutOfPods || !strings.Contains(st.Message, "pods") {
					t.Errorf("%s: status %+v, want Failed OutOfpods", name, st)
				}
			}
			if got := len(h.rec.reasons(ReasonOutOfPods)); got != 3-len(tc.admitted) {
				t.Errorf("OutOfpods events = %d, want %d", got, 3-len(tc.admitted))
			}
			// A pod rejected stays rejected when room is made, as Kubernetes' kubelet does.
			h.remove(a)
			h.runUntil(10 * time.Second)
			if got := len(h.calls("RunPodSandbox", "")); got != len(tc.admitted) {
				t.Errorf("RunPodSandbox calls after a removal = %d, want %d", got, len(tc.admitted))
			}
		})
	}
}

func TestRegistryQPS(t *testing.T) {
	cases := []struct {
		name       string
		qps, burst int32
		want       []time.Duration
	}{
		{"a burst of 2 then 1 a second", 1, 2, []time.Duration{0, 0, time.Second, 2 * time.Second}},
		{"2 a second after a burst of 1", 2, 1, []time.Duration{0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond}},
		{"qps 0 is unlimited", 0, 1, []time.Duration{0, 0, 0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(func(c *v1beta1.OrchletConfiguration) { c.RegistryPullQPS, c.RegistryBurst = tc.qps, tc.burst })
			h := newHarness(t, &fakescript.Script{}, cfg, nil)
			for _, n := range []string{"a", "b", "c", "d"} {
				h.add(newPod(n, ctr("app", "img-"+n+":1")))
			}
			h.runUntil(5 * time.Second)
			if got := starts(h.calls("PullImage", "")); !slices.Equal(got, tc.want) {
				t.Errorf("pulls began at %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSerializeImagePulls(t *testing.T) {
	script := &fakescript.Script{Images: []fakescript.ImageRule{{Match: "slow*", PullDuration: dur(30 * time.Second)}}}
	h := newHarness(t, script, config(nil), nil)
	h.add(newPod("a", ctr("app", "slow:1")), newPod("b", ctr("app", "slow:2")))
	h.runUntil(2 * time.Minute)
	pulls := h.calls("PullImage", "")
	if got := starts(pulls); !slices.Equal(got, []time.Duration{0, 30 * time.Second}) {
		t.Errorf("pulls began at %v, want one after the other: [0s 30s]", got)
	}
	for _, p := range pulls {
		if p.End.Sub(p.Start) != 30*time.Second || p.Code != "OK" {
			t.Errorf("pull %s ran %v code %s", p.Request, p.End.Sub(p.Start), p.Code)
		}
	}
	pulled := h.rec.reasons(images.ReasonPulled)
	if len(pulled) != 2 || !strings.Contains(pulled[0].note, "in 30s") {
		t.Errorf("Pulled events = %+v", pulled)
	}
}

// A Step held by a serialized pull still shows what it knows: the pods it admitted as Pending,
// and a pod whose container it started as Running while the next pod's pull runs.
func TestPodsShownWhileAPullHoldsTheStep(t *testing.T) {
	script := &fakescript.Script{Images: []fakescript.ImageRule{{Match: "slow*", PullDuration: dur(30 * time.Second)}}}
	h := newHarness(t, script, config(nil), nil)
	h.add(newPod("a", ctr("app", "slow:1")), newPod("b", ctr("app", "slow:2")))
	done := make(chan struct{})
	go func() {
		h.m.Step(h.ctx)
		close(done)
	}()
	waitParked := func() {
		t.Helper()
		for {
			if _, ok := h.parked(); ok {
				return
			}
			select {
			case <-done:
				t.Fatal("Step returned before its pull was parked")
			case <-h.ctx.Done():
				t.Fatal("no pull parked")
			default:
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
	phases := func() string {
		var out []string
		for _, p := range h.m.Pods() {
			out = append(out, p.Name+"="+string(p.Status.Phase))
		}
		return strings.Join(out, " ")
	}
	waitParked()
	if got, want := phases(), "a=Pending b=Pending"; got != want {
		t.Errorf("during a's pull, Pods = %q, want %q", got, want)
	}
	h.mock.Set(t0.Add(30 * time.Second))
	waitParked()
	if got, want := phases(), "a=Running b=Pending"; got != want {
		t.Errorf("during b's pull, Pods = %q, want %q", got, want)
	}
	h.mock.Set(t0.Add(time.Minute))
	<-done
	if got, want := phases(), "a=Running b=Running"; got != want {
		t.Errorf("after the Step, Pods = %q, want %q", got, want)
	}
}

func TestImagePullBackOff(t *testing.T) {
	script := &fakescript.Script{Images: []fakescript.ImageRule{{Match: "flaky*", PullError: &fakescript.PullError{Code: "NotFound", Message: "not found", Times: 2}}}}
	h := newHarness(t, script, config(nil), nil)
	h.add(newPod("p", ctr("app", "flaky:1")))
	h.runUntil(5 * time.Second)
	if w := h.pod("p").Status.ContainerStatuses[0].State.Waiting; w == nil || w.Reason != "ImagePullBackOff" {
		t.Errorf("waiting at 5s = %+v, want ImagePullBackOff", w)
	}
	h.runUntil(time.Minute)
	if got := starts(h.calls("PullImage", "")); !slices.Equal(got, []time.Duration{0, 10 * time.Second, 30 * time.Second}) {
		t.Errorf("pulls at %v, want [0s 10s 30s]", got)
	}
	if h.pod("p").Status.Phase != corev1.PodRunning {
		t.Errorf("phase = %s, want Running", h.pod("p").Status.Phase)
	}
	var errPull int
	for _, e := range h.rec.reasons(podsync.ReasonFailed) {
		if e.note == "Error: ErrImagePull" {
			errPull++
		}
	}
	if errPull != 2 {
		t.Errorf("ErrImagePull events = %d, want 2", errPull)
	}
}

func TestSyncFrequencyResync(t *testing.T) {
	cases := []struct {
		every time.Duration
		want  []time.Duration
	}{
		{time.Minute, []time.Duration{time.Minute, 2 * time.Minute}},
		{45 * time.Second, []time.Duration{45 * time.Second, 90 * time.Second}},
	}
	for _, tc := range cases {
		t.Run(tc.every.String(), func(t *testing.T) {
			cfg := config(func(c *v1beta1.OrchletConfiguration) { c.SyncFrequency.Duration = tc.every })
			h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"app:1"}}}, cfg, nil)
			// Four nameservers, one over the limit: every sync forms the pod's DNS config and
			// says so, which is how a sync that asks the runtime nothing is seen.
			pod := newPod("web", ctr("app", "app:1"))
			pod.Spec.DNSPolicy = corev1.DNSNone
			pod.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4"}}
			h.add(pod)
			h.runUntil(2*time.Minute + 10*time.Second)
			// After start-up (the sync at 0s and the one the next relist asks for, having seen the
			// new sandbox and container), only the resyncs look at the pod, and read what the
			// relist read: they ask the runtime nothing.
			var syncs []time.Duration
			for _, e := range h.rec.reasons("DNSConfigForming") {
				if e.at > 5*time.Second && !slices.Contains(syncs, e.at) {
					syncs = append(syncs, e.at)
				}
			}
			for _, c := range h.rt.Calls(calllog.Filter{}) {
				relist := (c.Method == "ListPodSandbox" || c.Method == "ListContainers") && !strings.Contains(c.Request, "uid-web")
				if c.Start.Sub(t0) > 5*time.Second && !relist {
					t.Errorf("at %v the runtime was asked %s %s; only the relist's lists were due", c.Start.Sub(t0), c.Method, c.Request)
				}
			}
			if !slices.Equal(syncs, tc.want) {
				t.Errorf("pod syncs after start at %v, want %v", syncs, tc.want)
			}
		})
	}
}

func TestNewRefusesMissingParts(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Options)
		want string
	}{
		{"no clock", func(o *Options) { o.Clock = nil }, "clock"},
		{"no runtime", func(o *Options) { o.Runtime = nil }, "runtime"},
		{"no recorder", func(o *Options) { o.Recorder = nil }, "recorder"},
		{"no config", func(o *Options) { o.Config = nil }, "configuration"},
		{"no feature gates", func(o *Options) { o.Gates = nil }, "feature gates"},
		{"no timeout", func(o *Options) {
			o.Config = config(func(c *v1beta1.OrchletConfiguration) { c.RuntimeRequestTimeout.Duration = 0 })
		}, "runtimeRequestTimeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, &fakescript.Script{}, config(nil), nil)
			o := Options{Clock: h.mock, Runtime: h.rs, Images: h.is, Recorder: h.rec, Config: config(nil), Gates: gatesOf(t, config(nil))}
			tc.mod(&o)
			if _, err := New(o); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

func TestRunLoop(t *testing.T) {
	h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"app:1"}}}, config(nil), nil)
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan error, 1)
	go func() { done <- h.m.Run(ctx) }()
	h.add(newPod("web", ctr("app", "app:1")))
	// Run wakes on the Update; everything it does then is instant on the runtime's clock.
	deadline := time.Now().Add(10 * time.Second)
	for {
		pods := h.m.Pods()
		if len(pods) == 1 && pods[0].Status.Phase == corev1.PodRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pod not running under Run: %+v", pods)
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
}

// A Step that only relists and finds nothing new publishes nothing; a change publishes again, and
// what Pods hands out is the caller's to change.
func TestPodsVersion(t *testing.T) {
	h := newHarness(t, nil, config(nil), nil)
	h.add(newPod("web", ctr("web", "nginx:1.27")))
	h.runUntil(5 * time.Second)
	v := h.m.PodsVersion()
	if v == 0 {
		t.Fatal("PodsVersion = 0 after the pod came up")
	}
	pods := h.m.Pods()
	if len(pods) != 1 || pods[0].Status.Phase != corev1.PodRunning {
		t.Fatalf("Pods = %+v, want one running pod", pods)
	}
	pods[0].Status.Phase = corev1.PodFailed
	pods[0].Labels = map[string]string{"changed": "by the caller"}

	h.runUntil(30 * time.Second) // relists every second, nothing changes, no resync yet
	if got := h.m.PodsVersion(); got != v {
		t.Errorf("PodsVersion moved from %d to %d with nothing changed", v, got)
	}
	if p := h.m.Pods()[0]; p.Status.Phase != corev1.PodRunning || p.Labels["changed"] != "" {
		t.Errorf("a caller's change to what Pods returned leaked back: phase %s, labels %v", p.Status.Phase, p.Labels)
	}

	h.remove(newPod("web", ctr("web", "nginx:1.27")))
	h.runUntil(35 * time.Second)
	if got := h.m.PodsVersion(); got == v {
		t.Error("PodsVersion did not move when the pod was removed")
	}
	if got := h.m.Pods(); len(got) != 0 {
		t.Errorf("Pods after removal = %d pods, want none", len(got))
	}
}
