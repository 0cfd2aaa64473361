package pods

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/fakecri"
)

func withSysctls(pod *corev1.Pod, names ...string) *corev1.Pod {
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{}
	for _, n := range names {
		pod.Spec.SecurityContext.Sysctls = append(pod.Spec.SecurityContext.Sysctls, corev1.Sysctl{Name: n, Value: "1"})
	}
	return pod
}

func TestSysctlAdmission(t *testing.T) {
	cases := []struct {
		name        string
		allowed     []string
		sysctls     []string
		hostNetwork bool
		hostIPC     bool
		want        string // the rejection message; "" admits
	}{
		{name: "no sysctls", want: ""},
		{name: "every safe sysctl", sysctls: safeSysctls},
		{name: "an unsafe sysctl not allowed", sysctls: []string{"net.ipv4.tcp_syncookies", "net.core.somaxconn"},
			want: `forbidden sysctl: "net.core.somaxconn" not allowlisted`},
		{name: "an unsafe sysctl allowed by name", allowed: []string{"net.core.somaxconn"}, sysctls: []string{"net.core.somaxconn"}},
		{name: "a name allows no longer one", allowed: []string{"kernel.msgmax"}, sysctls: []string{"kernel.msgmax_x"},
			want: `forbidden sysctl: "kernel.msgmax_x" not allowlisted`},
		{name: "a pattern allows what it prefixes", allowed: []string{"kernel.msg*", "net.ipv6.*"}, sysctls: []string{"kernel.msgmnb", "net.ipv6.conf.all.forwarding"}},
		{name: "a pattern allows nothing else", allowed: []string{"kernel.msg*"}, sysctls: []string{"kernel.sem"},
			want: `forbidden sysctl: "kernel.sem" not allowlisted`},
		{name: "a slash-separated name is the dotted one", allowed: []string{"net.core.somaxconn"}, sysctls: []string{"net/core/somaxconn"}},
		{name: "a net sysctl on the host network", sysctls: []string{"net.ipv4.tcp_syncookies"}, hostNetwork: true,
			want: `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled`},
		{name: "an IPC sysctl in the host's IPC namespace", allowed: []string{"kernel.shm*"}, sysctls: []string{"kernel.shmmax"}, hostIPC: true,
			want: `forbidden sysctl: "kernel.shmmax" not allowed with host IPC enabled`},
		{name: "an IPC sysctl on the host network", sysctls: []string{"kernel.shm_rmid_forced"}, hostNetwork: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := newSysctlAllowlist(tc.allowed)
			if err != nil {
				t.Fatal(err)
			}
			pod := newPod("p")
			if tc.sysctls != nil {
				withSysctls(pod, tc.sysctls...)
			}
			pod.Spec.HostNetwork, pod.Spec.HostIPC = tc.hostNetwork, tc.hostIPC
			if got := w.forbidden(pod); got != tc.want {
				t.Errorf("forbidden = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAllowedUnsafeSysctlsChecked(t *testing.T) {
	cases := []struct {
		pattern, want string
	}{
		{"kernel.hostname", "not known to be namespaced"},
		{"vm.*", "not known to be namespaced"},
		{"net.core.*.x", "must have at most 253 characters and match"},
		{"Net.core.somaxconn", "must have at most 253 characters and match"},
		{"net." + strings.Repeat("a", 250), "must have at most 253 characters"},
	}
	for _, tc := range cases {
		_, err := newSysctlAllowlist([]string{"net.core.somaxconn", tc.pattern})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "allowedUnsafeSysctls (--allowed-unsafe-sysctls)") {
			t.Errorf("%q: error %v, want one naming the field and %q", tc.pattern, err, tc.want)
		}
	}
	h := newHarness(t, &fakecri.Script{}, config(nil), nil)
	o := Options{Clock: h.mock, Runtime: h.m.rt, Images: h.m.img, Recorder: h.rec,
		Config: config(func(c *v1beta1.OrchletConfiguration) { c.AllowedUnsafeSysctls = []string{"vm.*"} })}
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
	h := newHarness(t, &fakecri.Script{Node: fakecri.NodeScript{PreloadImages: []string{"app:1"}}}, cfg, nil)
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
