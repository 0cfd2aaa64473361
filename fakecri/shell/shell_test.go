package shell

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestCapabilitySets: the capability sets /proc/self/status shows are those containerd makes from
// the security context (critest's ALL capability checks read CapBnd).
func TestCapabilitySets(t *testing.T) {
	caps := func(add, drop []string, privileged bool) *runtimeapi.LinuxContainerSecurityContext {
		return &runtimeapi.LinuxContainerSecurityContext{Privileged: privileged, Capabilities: &runtimeapi.Capability{AddCapabilities: add, DropCapabilities: drop}}
	}
	for _, tc := range []struct {
		name string
		sc   *runtimeapi.LinuxContainerSecurityContext
		want uint64
	}{
		{"default", nil, 0xa80425fb},
		{"privileged", caps(nil, []string{"ALL"}, true), 1<<41 - 1},
		{"add ALL", caps([]string{"ALL"}, nil, false), 1<<41 - 1},
		{"drop ALL", caps(nil, []string{"ALL"}, false), 0},
		{"drop ALL, add one", caps([]string{"NET_ADMIN"}, []string{"ALL"}, false), 1 << 12},
		{"add one, drop one", caps([]string{"CAP_SYS_ADMIN"}, []string{"CHOWN"}, false), (0xa80425fb | 1<<21) &^ 1},
	} {
		if got := capabilities(tc.sc); got != tc.want {
			t.Errorf("%s: %016x, want %016x", tc.name, got, tc.want)
		}
	}
}
