package security

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// podSetting is a pod that sets each sysctl named to 1.
func podSetting(names ...string) *corev1.Pod {
	var sysctls []corev1.Sysctl
	for _, n := range names {
		sysctls = append(sysctls, corev1.Sysctl{Name: n, Value: "1"})
	}
	return &corev1.Pod{Spec: corev1.PodSpec{SecurityContext: &corev1.PodSecurityContext{Sysctls: sysctls}}}
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
			w, err := NewSysctlAllowlist(tc.allowed)
			if err != nil {
				t.Fatal(err)
			}
			pod := &corev1.Pod{}
			if tc.sysctls != nil {
				pod = podSetting(tc.sysctls...)
			}
			pod.Spec.HostNetwork, pod.Spec.HostIPC = tc.hostNetwork, tc.hostIPC
			if got := w.Forbidden(pod); got != tc.want {
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
		_, err := NewSysctlAllowlist([]string{"net.core.somaxconn", tc.pattern})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "allowedUnsafeSysctls (--allowed-unsafe-sysctls)") {
			t.Errorf("%q: error %v, want one naming the field and %q", tc.pattern, err, tc.want)
		}
	}
}
