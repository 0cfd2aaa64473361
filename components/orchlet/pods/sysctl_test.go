package pods

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	fakescript "orch.io/orch/fakecri/script"
)

func withSysctls(pod *corev1.Pod, names ...string) *corev1.Pod {
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
	for _, n := range names {
		pod.Spec.SecurityContext.Sysctls = append(pod.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: n, Value: "1"})
	}
	return pod
}

// TestAllowedUnsafeSysctlsChecked: New refuses a pattern the allowlist refuses (see
// security's TestAllowedUnsafeSysctlsChecked for each rule).
func TestAllowedUnsafeSysctlsChecked(t *testing.T) {
	h := newHarness(t, &fakescript.Script{}, config(nil), nil)
	o := Options{Clock: h.mock, Runtime: h.rs, Images: h.is, Recorder: h.rec,
		Config: config(func(c *v1beta1.OrchletConfiguration) { c.AllowedUnsafeSysctls = []string{"vm.*"} }), Gates: gatesOf(t, config(nil))}
	if _, err := New(o); err == nil || !strings.Contains(err.Error(), `"vm."`) {
		t.Errorf("New with allowedUnsafeSysctls [vm.*]: %v, want an error", err)
	}
}

// TestSysctlForbiddenRejectedForGood runs the admission on the node: the forbidden pod never gets
// a sandbox, is Failed SysctlForbidden with a Warning event and takes no room; the allowed one
// runs with its sysctls in the sandbox config.
func TestSysctlForbiddenRejectedForGood(t *testing.T) {
	cfg := config(func(c *v1beta1.OrchletConfiguration) {
		c.MaxPods = 1
		c.AllowedUnsafeSysctls = []string{"net.core.*"}
	})
	h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"app:1"}}}, cfg, nil)
	bad := withSysctls(newPod("bad", ctr("app", "app:1")), "kernel.msgmax")
	good := withSysctls(newPod("good", ctr("app", "app:1")), "net.core.somaxconn", "net/ipv4/tcp_syncookies")
	h.add(bad, good)
	h.runUntil(5 * time.Second)
	if st := h.pod("bad").Status; st.Phase != corev1.PodFailed || st.Reason != ReasonSysctlForbidden || st.Message != `forbidden sysctl: "kernel.msgmax" not allowlisted` {
		t.Errorf("bad: status %+v, want Failed SysctlForbidden", st)
	}
	if ev := h.rec.reasons(ReasonSysctlForbidden); len(ev) != 1 || ev[0].kind != corev1.EventTypeWarning || ev[0].object != "default/bad" {
		t.Errorf("SysctlForbidden events = %v, want one Warning about bad", ev)
	}
	if st := h.pod("good").Status; st.Phase != corev1.PodRunning {
		t.Errorf("good: phase %s, want Running: the rejected pod must take no room", st.Phase)
	}
	if n := len(h.calls("RunPodSandbox", "name=bad")); n != 0 {
		t.Errorf("RunPodSandbox for the rejected pod: %d calls", n)
	}
	sysctls := h.m.sandboxConfig(good, 0).Linux.Sysctls
	if len(sysctls) != 2 || sysctls["net.core.somaxconn"] != "1" || sysctls["net.ipv4.tcp_syncookies"] != "1" {
		t.Errorf("sandbox sysctls = %v", sysctls)
	}
	h.add(bad)
	h.runUntil(10 * time.Second)
	if n := len(h.calls("RunPodSandbox", "name=bad")); n != 0 {
		t.Errorf("the rejected pod, sent again, got %d sandboxes", n)
	}
}
