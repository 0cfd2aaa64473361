// Package hostmounts undoes the mounts a node agent under test leaves on the host.
package hostmounts

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// UnmountUnder detaches every mount below dir, deepest first, so the directory can be removed:
// Kubernetes' kubelet bind-mounts its --root-dir onto itself, and pods' volumes are mounts too.
func UnmountUnder(dir string) error {
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		return err
	}
	var under []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
			under = append(under, f[1])
		}
	}
	var errs []error
	for i := len(under) - 1; i >= 0; i-- {
		if err := syscall.Unmount(under[i], syscall.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("unmount %s: %w", under[i], err))
		}
	}
	return errors.Join(errs...)
}
