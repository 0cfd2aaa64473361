package host

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// KernelDefaults are the tunables the node agent expects under --protect-kernel-defaults, the values
// Kubernetes' kubelet expects.
var KernelDefaults = map[string]int{
	"vm/overcommit_memory":      1,
	"vm/panic_on_oom":           0,
	"kernel/panic":              10,
	"kernel/panic_on_oops":      1,
	"kernel/keys/root_maxkeys":  1000000,
	"kernel/keys/root_maxbytes": 25000000,
}

// Requirements are the start-up checks the configuration turns on.
type Requirements struct {
	FailSwapOn            bool
	FailCgroupV1          bool
	ProtectKernelDefaults bool
}

// Check refuses a host that does not meet r. Each refusal names the option and the fact found; all of
// them are reported together.
func Check(h Host, r Requirements) error {
	var errs []error
	if r.FailSwapOn {
		on, err := h.SwapOn()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("--fail-swap-on: cannot tell whether swap is on: %w", err))
		case on:
			errs = append(errs, errors.New("--fail-swap-on: swap is on; turn swap off or set --fail-swap-on=false"))
		}
	}
	if r.FailCgroupV1 {
		v, err := h.CgroupVersion()
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("--fail-cgroupv1: cannot tell the cgroup version: %w", err))
		case v == 1:
			errs = append(errs, errors.New("--fail-cgroupv1: the host uses cgroup v1"))
		}
	}
	if r.ProtectKernelDefaults {
		for _, name := range slices.Sorted(maps.Keys(KernelDefaults)) {
			want := KernelDefaults[name]
			got, err := h.Sysctl(name)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("--protect-kernel-defaults: cannot read kernel tunable %s: %w", name, err))
			case got != want:
				errs = append(errs, fmt.Errorf("--protect-kernel-defaults: kernel tunable %s is %d, want %d", name, got, want))
			}
		}
	}
	return errors.Join(errs...)
}
