package conformance

import (
	"os"
	"strings"
	"syscall"
)

// unmountUnder undoes the mounts a stopped agent left under dir, deepest first, so the scenario's
// directory can be removed: Kubernetes' kubelet bind-mounts its --root-dir onto itself.
func unmountUnder(dir string) {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return
	}
	var under []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			under = append(under, f[1])
		}
	}
	for i := len(under) - 1; i >= 0; i-- {
		syscall.Unmount(under[i], 0)
	}
}
