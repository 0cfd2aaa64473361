package app

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"

	"github.com/benbjohnson/clock"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/agent"
	"orch.io/orch/components/orchlet/cm"
	"orch.io/orch/components/orchlet/eviction"
	"orch.io/orch/components/orchlet/host"
	"orch.io/orch/components/orchlet/options"
)

// machineOf is what the node's capacity is computed from: its cores and memory, and on a real
// machine its huge pages, kernel.pid_max and, with --local-storage-capacity-isolation, the size of
// --root-dir's filesystem.
func machineOf(o *options.Options, h host.Host) (cm.Machine, error) {
	memory, err := h.Memory()
	if err != nil {
		return cm.Machine{}, fmt.Errorf("reading the node's memory: %w", err)
	}
	m := cm.Machine{Cores: goruntime.NumCPU(), Memory: memory, HugePages: h.HugePageTotals()}
	if h.Sysfs() == "" {
		return m, nil
	}
	if pidMax, err := h.Sysctl("kernel/pid_max"); err == nil {
		m.PidMax = int64(pidMax)
	}
	if o.Config.LocalStorageCapacityIsolation {
		if err := os.MkdirAll(o.Flags.RootDir, 0o750); err != nil {
			return m, fmt.Errorf("--root-dir %s: %w", o.Flags.RootDir, err)
		}
		fs, err := eviction.HostNode{}.Statfs(o.Flags.RootDir)
		if err != nil {
			return m, fmt.Errorf("--root-dir %s: measuring its filesystem: %w", o.Flags.RootDir, err)
		}
		m.EphemeralStorage = int64(fs.CapacityBytes)
	}
	return m, nil
}

// resourcesOf is the node's capacity and allocatable (cm.NodeResources) on this machine.
func resourcesOf(o *options.Options, h host.Host) (cm.Resources, error) {
	m, err := machineOf(o, h)
	if err != nil {
		return cm.Resources{}, err
	}
	return cm.NodeResources(o.Config, o.Flags.ExperimentalAllocatableIgnoreEviction, m)
}

// newContainerManager is the container manager of this machine: a simulated one (no sysfs) has
// no cgroups, and its process settings are not applied to the test running it.
func newContainerManager(o *options.Options, h host.Host, clk clock.Clock, node string, rec cm.Recorder, res cm.Resources) (*cm.Manager, error) {
	opts := cm.Options{
		Clock: clk, Logger: klog.Background(), Node: node, Recorder: rec, Config: o.Config, Resources: res,
		Procfs: h.Procfs(), Pid: os.Getpid(), HugePageSizes: h.HugePageSizes(),
	}
	if sys := h.Sysfs(); sys != "" {
		version, err := h.CgroupVersion()
		if err != nil {
			return nil, err
		}
		opts.Cgroups = &cm.Hierarchy{Root: filepath.Join(sys, "fs", "cgroup"), V2: version == 2}
	}
	return cm.New(opts)
}

// startContainerManager makes the container manager of this machine and starts it before the
// agent runs a pod, as the kubelet starts its own: the process settings, node allocatable
// enforced, the system containers. Its events regard the Node and go where the agent's go.
func startContainerManager(o *options.Options, h host.Host, clk clock.Clock, node string, a *agent.Agent, res cm.Resources) (*cm.Manager, error) {
	m, err := newContainerManager(o, h, clk, node, a.Events, res)
	if err != nil {
		return nil, err
	}
	return m, m.Start()
}
