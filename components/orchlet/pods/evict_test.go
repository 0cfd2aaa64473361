package pods

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	fakescript "orch.io/orch/fakecri/script"
)

func TestEvictKillsWithTheOverrideAndFailsThePod(t *testing.T) {
	cfg := config(func(c *v1beta1.OrchletConfiguration) { c.MaxPods = 1 })
	h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"app:1"}}}, cfg, nil)
	a := newPod("a", ctr("app", "app:1"))
	g := int64(30)
	a.Spec.TerminationGracePeriodSeconds = &g
	h.add(a)
	h.runUntil(5 * time.Second)
	if names := activeNames(h.m); !slices.Equal(names, []string{"a"}) {
		t.Fatalf("active = %v", names)
	}
	h.m.Evict(a.UID, 7, "Evicted", "The node was low on resource: memory. ")
	if names := activeNames(h.m); len(names) != 0 {
		t.Fatalf("active right after Evict = %v: an evicted pod is no longer active", names)
	}
	if h.m.CleanedUp(a.UID) {
		t.Fatal("cleaned up before its kill")
	}
	h.runUntil(10 * time.Second)
	if !h.m.CleanedUp(a.UID) {
		t.Fatal("not cleaned up once its containers and sandbox stopped")
	}
	stops := h.calls("StopContainer", "")
	if len(stops) != 1 || !strings.Contains(stops[0].Request, "timeout=7") {
		t.Fatalf("StopContainer calls %v, want one with the override's 7s", stops)
	}
	st := h.pod("a").Status
	if st.Phase != corev1.PodFailed || st.Reason != "Evicted" || st.Message != "The node was low on resource: memory. " {
		t.Fatalf("status %s %q %q", st.Phase, st.Reason, st.Message)
	}
	if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Terminated == nil {
		t.Fatalf("container statuses %+v: the evicted pod's container shows it ended", st.ContainerStatuses)
	}
	// Never restarted on a resync, and its room is free for a new pod.
	b := newPod("b", ctr("app", "app:1"))
	h.add(b)
	h.runUntil(3 * time.Minute)
	if n := len(h.calls("StartContainer", "")); n != 2 {
		t.Fatalf("StartContainer calls = %d, want a's first and b's", n)
	}
	if h.pod("b").Status.Phase != corev1.PodRunning {
		t.Fatalf("b: %s, want Running in the room a left", h.pod("b").Status.Phase)
	}
}

// A hard eviction (an override of 0) still gives each container the least grace period of any
// kill, as the kubelet does.
func TestEvictGivesTheLeastGracePeriod(t *testing.T) {
	h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"app:1"}}}, config(nil), nil)
	a := newPod("a", ctr("app", "app:1"))
	h.add(a)
	h.runUntil(5 * time.Second)
	h.m.Evict(a.UID, 0, "Evicted", "The node was low on resource: memory. ")
	h.runUntil(10 * time.Second)
	stops := h.calls("StopContainer", "")
	if len(stops) != 1 || !strings.Contains(stops[0].Request, "timeout=2") {
		t.Fatalf("StopContainer calls %v, want one with 2s", stops)
	}
}

func activeNames(m *Manager) []string {
	var out []string
	for _, p := range m.ActivePods() {
		out = append(out, p.Name)
	}
	return out
}

func TestAdmitRefusesBeforeOtherHandlers(t *testing.T) {
	refuse := true
	h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"app:1"}}}, config(nil), func(o *Options) {
		o.Admit = func(p *corev1.Pod) (bool, string, string) {
			if refuse {
				return false, "Evicted", "The node had condition: [DiskPressure]. "
			}
			return true, "", ""
		}
	})
	a := newPod("a", ctr("app", "app:1"))
	h.add(a)
	h.runUntil(5 * time.Second)
	st := h.pod("a").Status
	if st.Phase != corev1.PodFailed || st.Reason != "Evicted" || st.Message != "The node had condition: [DiskPressure]. " {
		t.Fatalf("status %s %q %q", st.Phase, st.Reason, st.Message)
	}
	if evs := h.rec.reasons("Evicted"); len(evs) != 1 || evs[0].kind != corev1.EventTypeWarning {
		t.Fatalf("events %v, want one Warning Evicted", evs)
	}
	if n := len(h.calls("RunPodSandbox", "")); n != 0 {
		t.Fatalf("a refused pod ran: %d sandboxes", n)
	}
	refuse = false
	b := newPod("b", ctr("app", "app:1"))
	h.add(b)
	h.runUntil(10 * time.Second)
	if h.pod("b").Status.Phase != corev1.PodRunning {
		t.Fatal("admitted pod does not run")
	}
}
