package pods

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/fakecri"
)

// startedAt lists "name@seconds" for every Started event, in order.
func (h *harness) startedAt() []string {
	var out []string
	for _, e := range h.rec.reasons(ReasonStarted) {
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

func exits(name string, after time.Duration, code int32) fakecri.ContainerRule {
	return fakecri.ContainerRule{Match: fakecri.ContainerMatch{Name: name}, Exit: &fakecri.ExitSpec{After: dur(after), Code: code}}
}

func script(rules ...fakecri.ContainerRule) *fakecri.Script {
	return &fakecri.Script{Node: fakecri.NodeScript{PreloadImages: []string{"app:1"}}, Containers: rules}
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
	s := script(exits("setup", 2*time.Second, 0), fakecri.ContainerRule{Match: fakecri.ContainerMatch{Name: "logger", MaxAttempt: new(uint32)}, Exit: &fakecri.ExitSpec{After: dur(30 * time.Second), Code: 1}})
	s.Exec = []fakecri.ExecRule{{Command: "proxy-up", Until: dur(10 * time.Second), ExitCode: 1}}
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
	for _, e := range h.rec.reasons(ReasonKilling) {
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
	if len(h.rec.reasons(ReasonDeadlineExceeded)) != 1 {
		t.Error("no DeadlineExceeded event")
	}
}
