package sim

import (
	"fmt"

	"orch.io/orch/components/orchlet/host"
	"orch.io/orch/components/orchlet/options"
)

// StartRefused is a node whose agent refused to start, as orchlet exits at start on a host that
// fails its start-up checks.
type StartRefused struct {
	Node string
	Err  error
}

func (e *StartRefused) Error() string {
	return fmt.Sprintf("sim: node %s: orchlet refused to start: %v", e.Node, e.Err)
}

func (e *StartRefused) Unwrap() error { return e.Err }

// checkHost runs the agent's start-up checks, as the orchlet app does before anything else, on the
// simulated machine.
func checkHost(node string, h *Host, opts *options.Options) error {
	fake := host.NewFake()
	if h != nil {
		fake.Swap = h.Swap
		if h.CgroupVersion != 0 {
			fake.Cgroup = h.CgroupVersion
		}
		for name, v := range h.Sysctls {
			fake.Sysctls[name] = v
		}
	}
	err := host.Check(fake, host.Requirements{
		FailSwapOn:            opts.Config.FailSwapOn,
		FailCgroupV1:          opts.Flags.FailCgroupV1,
		ProtectKernelDefaults: opts.Config.ProtectKernelDefaults,
	})
	if err != nil {
		return &StartRefused{Node: node, Err: err}
	}
	return nil
}
