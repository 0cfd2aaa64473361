package pods

import (
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"k8s.io/utils/ptr"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/pods/podsync"
	fakescript "orch.io/orch/fakecri/script"
)

// startedAt lists "name@seconds" for every Started event, in order.
func (h *harness) startedAt() []string {
	var out []string
	for _, e := range h.rec.reasons(podsync.ReasonStarted) {
		name := e.note[strings.LastIndex(e.note, " ")+1:]
		out = append(out, name+"@"+e.at.String())
	}
	return out
}

func always() *corev1.ContainerRestartPolicy {
	p := corev1.ContainerRestartPolicyAlways
	return &p
}

func cond(st corev1.PodStatus, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

func exits(name string, after time.Duration, code int32) fakescript.ContainerRule {
	return fakescript.ContainerRule{Match: fakescript.ContainerMatch{Name: name}, Exit: &fakescript.ExitSpec{After: dur(after), Code: code}}
}

func script(rules ...fakescript.ContainerRule) *fakescript.Script {
	return &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"app:1"}}, Containers: rules}
}

// Init containers run one at a time, in order, each to success before the next and before the
// regular containers; meanwhile the pod is Pending, not Initialized, its regular containers
// PodInitializing.
func TestInitContainersRunInOrder(t *testing.T) {
	h := newHarness(t, script(exits("a", 5*time.Second, 0), exits("b", 3*time.Second, 0)), config(nil), nil)
	pod := newPod("p", ctr("app", "app:1"))
	pod.Spec.InitContainers = []corev1.Container{ctr("a", "app:1"), ctr("b", "app:1")}
	h.add(pod)
	h.runUntil(2 * time.Second)
	st := h.pod("p").Status
	if st.Phase != corev1.PodPending || st.ContainerStatuses[0].State.Waiting.Reason != "PodInitializing" {
		t.Errorf("while a runs: phase %s, app %+v", st.Phase, st.ContainerStatuses[0].State)
	}
	if c := cond(st, corev1.PodInitialized); c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotInitialized" || c.Message != "containers with incomplete status: [a b]" {
		t.Errorf("Initialized = %+v", c)
	}
	if c := cond(st, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != "ContainersNotReady" || c.Message != "containers with unready status: [app]" {
		t.Errorf("Ready = %+v", c)
	}
	if c := cond(st, corev1.PodReadyToStartContainers); c.Status != corev1.ConditionTrue {
		t.Errorf("PodReadyToStartContainers = %+v", c)
	}
	off := newHarness(t, script(), config(func(c *v1beta1.OrchletConfiguration) {
		c.FeatureGates = map[string]bool{"PodReadyToStartContainersCondition": false}
	}), nil)
	off.add(newPod("p", ctr("app", "app:1")))
	off.runUntil(time.Second)
	if c := cond(off.pod("p").Status, corev1.PodReadyToStartContainers); c.Type != "" {
		t.Errorf("with the gate off: %+v", c)
	}
	h.runUntil(10 * time.Second)
	if got, want := h.startedAt(), []string{"a@0s", "b@5s", "app@8s"}; !slices.Equal(got, want) {
		t.Errorf("starts = %v, want %v", got, want)
	}
	st = h.pod("p").Status
	if st.Phase != corev1.PodRunning || cond(st, corev1.PodInitialized).Status != corev1.ConditionTrue || cond(st, corev1.PodReady).Status != corev1.ConditionTrue {
		t.Errorf("after init: %+v", st)
	}
	for _, ic := range st.InitContainerStatuses {
		if ic.State.Terminated == nil || ic.State.Terminated.Reason != "Completed" || !ic.Ready {
			t.Errorf("init container %s: %+v", ic.Name, ic)
		}
	}
}

// A failed init container is restarted with back-off under OnFailure and Always, and fails the
// pod under Never, the regular containers never starting.
func TestInitContainerFailure(t *testing.T) {
	cases := []struct {
		policy corev1.RestartPolicy
		starts []string
		phase  corev1.PodPhase
	}{
		{corev1.RestartPolicyNever, []string{"init@0s"}, corev1.PodFailed},
		{corev1.RestartPolicyOnFailure, []string{"init@0s", "init@2s", "init@14s"}, corev1.PodPending},
		{corev1.RestartPolicyAlways, []string{"init@0s", "init@2s", "init@14s"}, corev1.PodPending},
	}
	for _, tc := range cases {
		t.Run(string(tc.policy), func(t *testing.T) {
			h := newHarness(t, script(exits("init", 2*time.Second, 1)), config(nil), nil)
			pod := newPod("p", ctr("app", "app:1"))
			pod.Spec.InitContainers = []corev1.Container{ctr("init", "app:1")}
			pod.Spec.RestartPolicy = tc.policy
			h.add(pod)
			h.runUntil(20 * time.Second)
			if got := h.startedAt(); !slices.Equal(got, tc.starts) {
				t.Errorf("starts = %v, want %v", got, tc.starts)
			}
			if got := h.pod("p").Status.Phase; got != tc.phase {
				t.Errorf("phase = %s, want %s", got, tc.phase)
			}
			if tc.policy == corev1.RestartPolicyNever {
				if len(h.calls("StopPodSandbox", "")) != 1 {
					t.Error("the failed pod's sandbox was not stopped")
				}
				if c := cond(h.pod("p").Status, corev1.PodReady); c.Reason != "PodFailed" {
					t.Errorf("Ready = %+v", c)
				}
			}
		})
	}
}

// A sidecar starts in order and the next init container waits until its startup probe passed;
// it keeps running (restarted when it exits) beside the regular containers; the pod's end stops
// the regular containers first, then the sidecars in reverse order.
func TestSidecars(t *testing.T) {
	s := script(exits("setup", 2*time.Second, 0), fakescript.ContainerRule{Match: fakescript.ContainerMatch{Name: "logger", MaxAttempt: new(uint32)}, Exit: &fakescript.ExitSpec{After: dur(30 * time.Second), Code: 1}})
	s.Exec = []fakescript.ExecRule{{Command: "proxy-up", Until: dur(10 * time.Second), ExitCode: 1}}
	h := newHarness(t, s, config(nil), nil)
	proxy := ctr("proxy", "app:1")
	proxy.RestartPolicy = always()
	proxy.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"proxy-up"}}}, PeriodSeconds: 5}
	logger := ctr("logger", "app:1")
	logger.RestartPolicy = always()
	pod := newPod("p", ctr("app", "app:1"))
	pod.Spec.InitContainers = []corev1.Container{proxy, ctr("setup", "app:1"), logger}
	h.add(pod)
	h.runUntil(5 * time.Second)
	st := h.pod("p").Status
	if st.Phase != corev1.PodPending || *st.InitContainerStatuses[0].Started {
		t.Errorf("before the startup probe passed: %s, proxy %+v", st.Phase, st.InitContainerStatuses[0])
	}
	h.runUntil(40 * time.Second)
	// proxy probed at 0s, 5s (fail), 10s (pass): setup then, logger at 12s, app at once after it.
	want := []string{"proxy@0s", "setup@10s", "logger@12s", "app@12s", "logger@42s"}
	h.runUntil(45 * time.Second)
	if got := h.startedAt(); !slices.Equal(got, want) {
		t.Errorf("starts = %v, want %v", got, want)
	}
	st = h.pod("p").Status
	if st.Phase != corev1.PodRunning || cond(st, corev1.PodReady).Status != corev1.ConditionTrue {
		t.Errorf("running: %s %+v", st.Phase, st.Conditions)
	}
	h.remove(pod)
	h.runUntil(50 * time.Second)
	var order []string
	for _, e := range h.rec.reasons(podsync.ReasonKilling) {
		order = append(order, e.note)
	}
	if want := []string{"Stopping container app", "Stopping container logger", "Stopping container proxy"}; !slices.Equal(order, want) {
		t.Errorf("stopped %v, want %v", order, want)
	}
}

// With restartPolicy Never, a pod whose regular containers all exited is terminal: its sidecar is
// stopped and it is Succeeded (all exit 0) or Failed, its conditions saying so.
func TestTerminalPodStopsSidecars(t *testing.T) {
	for _, code := range []int32{0, 3} {
		h := newHarness(t, script(exits("app", 5*time.Second, code)), config(nil), nil)
		side := ctr("side", "app:1")
		side.RestartPolicy = always()
		pod := newPod("p", ctr("app", "app:1"))
		pod.Spec.InitContainers = []corev1.Container{side}
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		h.add(pod)
		h.runUntil(20 * time.Second)
		st := h.pod("p").Status
		want, reason := corev1.PodSucceeded, "PodCompleted"
		if code != 0 {
			want, reason = corev1.PodFailed, "PodFailed"
		}
		if st.Phase != want || cond(st, corev1.ContainersReady).Reason != reason {
			t.Errorf("exit %d: phase %s, conditions %+v", code, st.Phase, st.Conditions)
		}
		if st.InitContainerStatuses[0].State.Terminated == nil || len(h.calls("StopPodSandbox", "")) != 1 {
			t.Errorf("exit %d: the sidecar and sandbox were not stopped: %+v", code, st.InitContainerStatuses[0].State)
		}
		if got := h.startedAt(); !slices.Equal(got, []string{"side@0s", "app@0s"}) {
			t.Errorf("exit %d: starts %v", code, got)
		}
	}
}

// activeDeadlineSeconds fails the pod with DeadlineExceeded and stops it.
func TestActiveDeadline(t *testing.T) {
	h := newHarness(t, script(), config(nil), nil)
	pod := newPod("p", ctr("app", "app:1"))
	d := int64(30)
	pod.Spec.ActiveDeadlineSeconds = &d
	h.add(pod)
	h.runUntil(29 * time.Second)
	if st := h.pod("p").Status; st.Phase != corev1.PodRunning {
		t.Fatalf("before the deadline: %s", st.Phase)
	}
	h.runUntil(31 * time.Second)
	st := h.pod("p").Status
	if st.Phase != corev1.PodFailed || st.Reason != "DeadlineExceeded" || st.Message != "Pod was active on the node longer than the specified deadline" || st.ContainerStatuses[0].State.Terminated == nil {
		t.Errorf("after the deadline: %s %q %q", st.Phase, st.Reason, st.Message)
	}
	if c := h.calls("StopContainer", ""); len(c) != 1 || c[0].Start.Sub(t0) != 30*time.Second {
		t.Errorf("StopContainer calls %v", starts(c))
	}
	if len(h.rec.reasons(podsync.ReasonDeadlineExceeded)) != 1 {
		t.Error("no DeadlineExceeded event")
	}
}

// A postStart hook runs right after the start; when it fails the container is killed with a
// FailedPostStartHook event and waits as PostStartHookError, then restarts with back-off.
func TestPostStartHook(t *testing.T) {
	var mu sync.Mutex
	var agents []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		agents = append(agents, r.UserAgent())
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer srv.Close()
	hookHost, portText, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	hookPort, _ := strconv.Atoi(portText)
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		if len(agents) != 1 || agents[0] != "orch-lifecycle/1.37" {
			t.Errorf("hook requests' User-Agent = %v", agents)
		}
	}()
	for _, tc := range []struct {
		name    string
		handler corev1.LifecycleHandler
		fails   bool
	}{
		{"exec passes", corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"echo", "hi"}}}, false},
		{"exec fails", corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}, true},
		{"sleep", corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 3}}, false},
		// a hook's HTTP status does not matter, as in the kubelet; only an error fails it
		{"httpGet answered 500", corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Host: hookHost, Port: intstr.FromInt(hookPort), Path: "/warm"}}, false},
		{"httpGet refused", corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Host: "127.0.0.1", Port: intstr.FromInt(closedPort(t)), Path: "/warm"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, script(), config(nil), func(o *Options) { o.Version = "1.37" })
			c := ctr("app", "app:1")
			c.Lifecycle = &corev1.Lifecycle{PostStart: &tc.handler}
			h.add(newPod("p", c, ctr("next", "app:1")))
			h.runUntil(5 * time.Second)
			cs := h.pod("p").Status.ContainerStatuses[0]
			if !tc.fails {
				if len(h.rec.reasons(podsync.ReasonFailedPostStartHook)) != 0 || len(h.calls("StopContainer", "")) != 0 {
					t.Errorf("a passing hook killed the container: %v", h.rec.lines())
				}
				want := []string{"app@0s", "next@0s"}
				if tc.handler.Sleep != nil {
					want = []string{"app@0s", "next@3s"} // the next container waits for the hook
				}
				if got := h.startedAt(); !slices.Equal(got, want) {
					t.Errorf("starts %v, want %v", got, want)
				}
				return
			}
			// the first restart is at once, as after any exit; the next waits for the back-off
			e := h.rec.reasons(podsync.ReasonFailedPostStartHook)
			if len(e) != 2 || e[0].note != "PostStartHook failed" {
				t.Errorf("events %v", h.rec.lines())
			}
			if k := h.rec.reasons(podsync.ReasonKilling); len(k) != len(e) || k[0].note != "FailedPostStartHook" || len(h.calls("StopContainer", "")) != len(e) {
				t.Errorf("Killing events %v", k)
			}
			if cs.State.Waiting == nil || (cs.State.Waiting.Reason != "PostStartHookError" && cs.State.Waiting.Reason != "CrashLoopBackOff") {
				t.Errorf("state %+v", cs.State)
			}
			h.runUntil(15 * time.Second)
			if n := len(h.calls("StartContainer", "")); n < 2 {
				t.Errorf("not restarted: %d starts", n)
			}
		})
	}
}

// A preStop hook runs before StopContainer, within the grace period (the deletion's when given,
// else the pod's), and StopContainer gets what is left of it, at least 2 seconds.
func TestPreStopAndGracePeriods(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sleep    int64
		podGrace int64
		delGrace *int64
		timeout  string // StopContainer's
		at       time.Duration
	}{
		{"no hook", 0, 30, nil, "timeout=30", 10 * time.Second},
		{"sleep 5 of 30", 5, 30, nil, "timeout=25", 15 * time.Second},
		{"sleep 5 of 6 keeps the minimum", 5, 6, nil, "timeout=2", 15 * time.Second},
		{"sleep cut at the grace period", 60, 8, nil, "timeout=2", 18 * time.Second},
		{"the deletion's grace period", 5, 30, ptr.To(int64(10)), "timeout=5", 15 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, script(), config(nil), nil)
			c := ctr("app", "app:1")
			if tc.sleep > 0 {
				c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: tc.sleep}}}
			}
			pod := newPod("p", c)
			pod.Spec.TerminationGracePeriodSeconds = &tc.podGrace
			h.add(pod)
			h.runUntil(10 * time.Second)
			gone := pod.DeepCopy()
			gone.DeletionGracePeriodSeconds = tc.delGrace
			h.remove(gone)
			h.runUntil(2 * time.Minute)
			stops := h.calls("StopContainer", "")
			if len(stops) != 1 || !strings.HasSuffix(stops[0].Request, tc.timeout) || stops[0].Start.Sub(t0) != tc.at {
				t.Fatalf("StopContainer = %+v, want %s at %v", stops, tc.timeout, tc.at)
			}
		})
	}
}

// closedPort is a local port nothing listens on.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// An exited container's message ends with its termination message: with FallbackToLogsOnError
// and a failure, the end of its log when no termination message file says anything.
func TestTerminationMessageFromLogs(t *testing.T) {
	for _, tc := range []struct {
		policy corev1.TerminationMessagePolicy
		code   int32
		want   string
	}{
		{corev1.TerminationMessageFallbackToLogsOnError, 2, "starting\npanic: boom\ngoroutine 1\n"},
		{corev1.TerminationMessageFallbackToLogsOnError, 0, ""},
		{corev1.TerminationMessageReadFile, 2, ""},
	} {
		t.Run(string(tc.policy)+strconv.Itoa(int(tc.code)), func(t *testing.T) {
			log := "2025-01-01T00:00:01Z stdout F starting\n2025-01-01T00:00:02Z stderr P panic: \n2025-01-01T00:00:02Z stderr F boom\n2025-01-01T00:00:02Z stderr F goroutine 1\n"
			fsys := fstest.MapFS{"var/log/pods/default_p_uid-p/app/0.log": {Data: []byte(log)}}
			h := newHarness(t, script(exits("app", 2*time.Second, tc.code)), config(nil), func(o *Options) { o.FS = fsys })
			c := ctr("app", "app:1")
			c.TerminationMessagePolicy = tc.policy
			pod := newPod("p", c)
			pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
			h.add(pod)
			h.runUntil(3 * time.Second)
			last := h.pod("p").Status.ContainerStatuses[0].LastTerminationState.Terminated
			if last == nil || last.Message != tc.want {
				t.Errorf("last state %+v, want message %q", last, tc.want)
			}
		})
	}
}
