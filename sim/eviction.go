package sim

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/cpumanager"
	"orch.io/orch/components/orchlet/eviction"
	"orch.io/orch/components/orchlet/memorymanager"
	"orch.io/orch/components/orchlet/volumestats"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/script"
)

// Host is the simulated machine the eviction manager observes besides the runtime: its memory and
// processes. Pods' usage comes from fakecri's usage curves, the filesystems from fakecri's.
type Host struct {
	// Memory is the machine's memory (default 8Gi); SystemMemory what runs outside pods uses.
	Memory       *script.Quantity `json:"memory,omitempty"`
	SystemMemory *script.Quantity `json:"systemMemory,omitempty"`
	// PidMax is kernel/pid_max (default 4194304); SystemProcesses run outside pods.
	PidMax          int64 `json:"pidMax,omitempty"`
	SystemProcesses int64 `json:"systemProcesses,omitempty"`
	// Swap, CgroupVersion (default 2) and Sysctls (over Kubernetes' kernel defaults) are what the
	// agent's start-up checks (--fail-swap-on, --fail-cgroupv1, --protect-kernel-defaults) find.
	Swap          bool           `json:"swap,omitempty"`
	CgroupVersion int            `json:"cgroupVersion,omitempty"`
	Sysctls       map[string]int `json:"sysctls,omitempty"`
	// CPUs is the machine's CPU layout, which the static CPU manager, the topology manager and
	// the Static memory manager (Memory shared evenly between its NUMA nodes) read; without it
	// their static policies are refused, as on a machine whose sysfs is unknown.
	CPUs *CPULayout `json:"cpus,omitempty"`
}

// CPULayout describes a machine of identical sockets: NUMA nodes per socket, cores per NUMA node,
// threads per core. CPUs are numbered socket by socket, node by node, core by core.
type CPULayout struct {
	Sockets        int `json:"sockets"`
	NUMAPerSocket  int `json:"numaPerSocket"`
	CoresPerNUMA   int `json:"coresPerNUMA"`
	ThreadsPerCore int `json:"threadsPerCore"`
}

// topology is the layout as the CPU manager reads it from sysfs.
func (l CPULayout) topology() (*cpumanager.Topology, error) {
	if l.Sockets < 1 || l.NUMAPerSocket < 1 || l.CoresPerNUMA < 1 || l.ThreadsPerCore < 1 {
		return nil, fmt.Errorf("host.cpus: sockets, numaPerSocket, coresPerNUMA and threadsPerCore must be at least 1: %+v", l)
	}
	t := &cpumanager.Topology{}
	id := 0
	for s := range l.Sockets {
		for n := range l.NUMAPerSocket {
			for range l.CoresPerNUMA {
				// A core is numbered by its first thread, unique on the machine, and a socket is
				// its CPUs' uncore cache, as sysfs without split caches reads.
				core := id
				for range l.ThreadsPerCore {
					t.CPUs = append(t.CPUs, cpumanager.CPUInfo{ID: id, Socket: s, NUMANode: s*l.NUMAPerSocket + n, Core: core, UncoreCache: s})
					id++
				}
			}
		}
	}
	return t, nil
}

// numaNodes are the layout's NUMA nodes as the memory manager reads them from sysfs: the
// machine's memory shared evenly between them, without huge pages.
func (l CPULayout) numaNodes(memory uint64) ([]memorymanager.Node, error) {
	count := l.Sockets * l.NUMAPerSocket
	if count < 1 {
		return nil, fmt.Errorf("host.cpus: sockets and numaPerSocket must be at least 1: %+v", l)
	}
	nodes := make([]memorymanager.Node, count)
	for i := range nodes {
		nodes[i] = memorymanager.Node{ID: i, Memory: memory / uint64(count)}
	}
	return nodes, nil
}

const (
	defaultHostMemory = 8 << 30
	defaultPidMax     = 4194304
)

func (h *Host) memory() uint64 {
	if h == nil || h.Memory == nil {
		return defaultHostMemory
	}
	return uint64(h.Memory.Value())
}

// simNode is the eviction observer's view of a simulated node: eviction.NodeSource over the Host
// and fakecri, and the runtime's stats read without a CRI call, so observing leaves the trace as it
// was (a real node's cadvisor reads cgroups, not the runtime).
type simNode struct {
	rt   *fakecri.Runtime
	cri  inProcess // for its reply hook: these answers are the runtime's, read without a call
	host Host
	// One observation reads the sandboxes' stats three times (memory, pids, pods): they are
	// computed once per instant, each instant's written over the last's (arena). What reads them,
	// the eviction observer (its PodStatsFromCRI copies the figures) and the memcg thresholds, does
	// so within the instant; a reply hook is handed copies (answerAll).
	now     func() time.Time
	at      time.Time
	sandbox []*runtimeapi.PodSandboxStats
	arena   fakecri.StatsArena
}

func (s *simNode) sandboxes() []*runtimeapi.PodSandboxStats {
	if now := s.now(); s.sandbox == nil || !now.Equal(s.at) {
		s.at, s.sandbox = now, s.rt.SandboxStats(&s.arena)
	}
	return s.sandbox
}

// Memory has no inactive file pages: usage is the working set.
func (s *simNode) Memory() (capacity, usage, workingSet uint64, err error) {
	ws := s.usage(false)
	return s.host.memory(), ws, ws, nil
}

// usage is the memory the root cgroup holds (what runs outside pods and the pods), or the pods'
// cgroup alone.
func (s *simNode) usage(podsOnly bool) uint64 {
	var ws uint64
	if s.host.SystemMemory != nil && !podsOnly {
		ws = uint64(s.host.SystemMemory.Value())
	}
	for _, sb := range s.sandboxes() {
		ws += sb.GetLinux().GetMemory().GetWorkingSetBytes().GetValue()
	}
	return ws
}

// Statfs answers for fakecri's filesystems by mountpoint; --root-dir is on its root filesystem.
func (s *simNode) Statfs(path string) (eviction.FsStats, error) {
	fss := s.rt.Filesystems()
	i := slices.IndexFunc(fss, func(f fakecri.FilesystemStats) bool { return f.Mountpoint == path })
	if i < 0 {
		i = slices.IndexFunc(fss, func(f fakecri.FilesystemStats) bool { return f.Name == "rootfs" })
	}
	f := fss[i]
	return eviction.FsStats{AvailableBytes: f.AvailableBytes, CapacityBytes: f.CapacityBytes, InodesFree: f.InodesFree, Inodes: f.Inodes}, nil
}

func (s *simNode) Pids() (max, running uint64, err error) {
	max, running = defaultPidMax, uint64(s.host.SystemProcesses)
	if s.host.PidMax > 0 {
		max = uint64(s.host.PidMax)
	}
	for _, sb := range s.sandboxes() {
		running += sb.GetLinux().GetProcess().GetProcessCount().GetValue()
	}
	return max, running, nil
}

func (s *simNode) ListPodSandboxStats(context.Context, *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	return answerAll(s.cri, "ListPodSandboxStats", s.sandboxes(), nil)
}

// ImageFsInfo is the runtime's answer, read from its filesystems without a call.
func (s *simNode) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	resp := &runtimeapi.ImageFsInfoResponse{}
	fss := s.rt.Filesystems()
	parts := make([]fsUsage, len(fss))
	for i, f := range fss {
		p := &parts[i]
		p.id.Mountpoint, p.used.Value, p.inodes.Value = f.Mountpoint, f.UsedBytes, f.InodesUsed
		u := &p.usage
		u.FsId, u.UsedBytes, u.InodesUsed = &p.id, &p.used, &p.inodes
		if f.HoldsImages {
			resp.ImageFilesystems = append(resp.ImageFilesystems, u)
		}
		if f.HoldsContainers {
			resp.ContainerFilesystems = append(resp.ContainerFilesystems, u)
		}
	}
	return replied(s.cri, "ImageFsInfo", resp, nil)
}

// fsUsage is one filesystem's usage in an ImageFsInfo answer with the messages it points to, made
// together: four allocations a filesystem at every eviction round of every node were one a round.
type fsUsage struct {
	usage        runtimeapi.FilesystemUsage
	id           runtimeapi.FilesystemIdentifier
	used, inodes runtimeapi.UInt64Value
}

// newObserver is the eviction observer of a simulated node, as the orchlet app's is of a real one:
// with node allocatable enforced on pods, their memory is watched against capacity less the
// reservations; with OrchletSeparateDiskGC a container filesystem apart from the images' is
// containerfs.
// The simulated host's memory controller notifies thresholds crossed (simMemcg).
func newObserver(cri inProcess, now func() time.Time, h *Host, cfg *v1beta1.OrchletConfiguration, separateDiskGC bool) (eviction.Observer, *simMemcg) {
	var host Host
	if h != nil {
		host = *h
	}
	n := &simNode{rt: cri.rt, cri: cri, host: host, now: now}
	o := &eviction.CRIObserver{Node: n, CRI: n, RootDir: "/var/lib/orchlet", SeparateDiskGC: separateDiskGC}
	if slices.Contains(cfg.EnforceNodeAllocatable, "pods") {
		alloc := int64(host.memory())
		for _, reserved := range []map[string]string{cfg.KubeReserved, cfg.SystemReserved} {
			if q, err := resource.ParseQuantity(reserved["memory"]); err == nil {
				alloc -= q.Value()
			}
		}
		o.AllocatableMemory = uint64(max(alloc, 0))
	}
	return o, &simMemcg{node: n}
}

// diskUsage is what the simulated node's du sees under path: the files there by their size (log
// files the runtime wrote, downward API files), and what fakecri's containers wrote to a volume
// mounted from it. Under the pods' log directory (logs) only fakecri makes files, so where it made
// none there is nothing to walk: what the walk of a missing directory answers, without the kernel
// (an eviction round measures every container's log directory, most of them never written).
func diskUsage(rt *fakecri.Runtime, logs string) func(string) (volumestats.Usage, error) {
	under := logs + string(filepath.Separator) // joined once: a round measures every container
	return func(path string) (volumestats.Usage, error) {
		if strings.HasPrefix(path, under) && !rt.LogsUnder(path) {
			return volumestats.Usage{}, &fs.PathError{Op: "lstat", Path: path, Err: syscall.ENOENT}
		}
		u, err := volumestats.ApparentUsage(path)
		if err != nil {
			return u, err
		}
		u.Bytes += rt.VolumeUsage(path)
		return u, nil
	}
}

// pressureText is the node's pressure conditions as the trace shows them: "none" when there are
// none after some were traced, "" before any.
func pressureText(n *Node) string {
	conds := n.Agent.Pressure()
	if len(conds) == 0 {
		if n.pressure == "" {
			return ""
		}
		return "none"
	}
	s := ""
	for i, c := range conds {
		if i > 0 {
			s += ","
		}
		s += string(c)
	}
	return s
}
