package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"

	"github.com/benbjohnson/clock"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/agent"
	"orch.io/orch/components/orchlet/cm"
	"orch.io/orch/components/orchlet/eviction"
	"orch.io/orch/components/orchlet/host"
	"orch.io/orch/components/orchlet/options"
	"orch.io/orch/components/orchlet/server"
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
		RuntimeCgroups: o.Flags.RuntimeCgroups, Started: clk.Now(),
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

// summaryStats answers /stats/summary: the agent's pods, and the container manager's system
// containers, as the kubelet's summary provider puts them together.
type summaryStats struct {
	agent *agent.Agent
	cm    *cm.Manager
}

func (s summaryStats) Summary(ctx context.Context) (*server.Summary, error) {
	out, err := s.agent.Summary(ctx)
	if err != nil {
		return nil, err
	}
	for _, c := range s.cm.SystemContainers() {
		at := metav1.NewTime(c.Time)
		st := server.ContainerStats{
			Name: c.Name, StartTime: metav1.NewTime(c.StartTime),
			CPU: &server.CPUStats{Time: at, UsageNanoCores: u64(c.UsageNanoCores), UsageCoreNanoSeconds: u64(c.CPUUsage)},
			Memory: &server.MemoryStats{Time: at, UsageBytes: u64(c.MemoryUsage), WorkingSetBytes: u64(c.WorkingSet),
				RSSBytes: u64(c.RSS), PageFaults: u64(c.PageFaults), MajorPageFaults: u64(c.MajorPageFaults)},
		}
		if c.MemoryLimit != 0 {
			st.Memory.AvailableBytes = u64(c.MemoryLimit - min(c.MemoryLimit, c.WorkingSet))
		}
		out.Node.SystemContainers = append(out.Node.SystemContainers, st)
	}
	return out, nil
}

func u64(v uint64) *uint64 { return &v }
