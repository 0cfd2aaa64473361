package eviction

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/labels"
)

// NodeSource is what the CRI does not say about the node: its memory, filesystems and processes.
type NodeSource interface {
	// Memory is the node's memory capacity, usage and working set (usage less inactive file
	// pages).
	Memory() (capacity, usage, workingSet uint64, err error)
	// Statfs is the filesystem that holds path.
	Statfs(path string) (FsStats, error)
	// Pids is pid_max and the number of processes (and threads) on the node.
	Pids() (max, running uint64, err error)
}

// PodStatsSource lists the pods' usage: the runtime's ListPodSandboxStats
// (PodAndContainerStatsFromCRI), and ImageFsInfo for the image and container filesystems.
type PodStatsSource interface {
	ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error)
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// CRIObserver observes the node from a NodeSource and the pods and image filesystems from the
// runtime, as Kubernetes' summary provider does with PodAndContainerStatsFromCRI.
type CRIObserver struct {
	Node NodeSource
	CRI  PodStatsSource
	// RootDir is --root-dir: its filesystem is nodefs.
	RootDir string
	// AllocatableMemory is the pods' memory allocatable; 0 observes no allocatableMemory.available.
	AllocatableMemory uint64
	// SeparateDiskGC (the OrchletSeparateDiskGC gate) observes the runtime's container filesystem
	// as containerfs when it is not the image filesystem.
	SeparateDiskGC bool
}

// Observe reads everything once. A part of the node it cannot read (a filesystem the runtime
// names but this process cannot see, say) is left out and named in Unobserved, so its signals are
// not evaluated while the others are, as Kubernetes' makeSignalObservations skips what the summary
// lacks; without the pods' stats there is no round.
func (o *CRIObserver) Observe(ctx context.Context) (Stats, error) {
	var s Stats
	miss := func(part string, err error) { s.Unobserved = append(s.Unobserved, fmt.Sprintf("%s: %v", part, err)) }
	if capacity, usage, ws, err := o.Node.Memory(); err != nil {
		miss("memory", err)
	} else {
		s.Memory = &MemoryStats{AvailableBytes: sub(capacity, ws), WorkingSetBytes: ws, UsageBytes: usage}
	}
	if nodefs, err := o.Node.Statfs(o.RootDir); err != nil {
		miss("nodefs", err)
	} else {
		s.NodeFs = &nodefs
	}
	o.observeRuntimeFs(ctx, &s, miss)
	if maxPID, running, err := o.Node.Pids(); err != nil {
		miss("pid", err)
	} else {
		s.Pids = &PidStats{MaxPID: maxPID, Running: running}
	}
	sbs, err := o.CRI.ListPodSandboxStats(ctx, &runtimeapi.PodSandboxStatsFilter{})
	if err != nil {
		return s, fmt.Errorf("pods: the runtime's ListPodSandboxStats: %w", err)
	}
	s.Pods = PodStatsFromCRI(sbs)
	if o.AllocatableMemory > 0 {
		var pods, usage uint64
		for _, p := range s.Pods {
			pods += p.MemoryWorkingSetBytes
			usage += p.MemoryUsageBytes
		}
		s.PodsMemory = &MemoryStats{AvailableBytes: sub(o.AllocatableMemory, pods), WorkingSetBytes: pods, UsageBytes: usage}
	}
	return s, nil
}

// observeRuntimeFs reads the image filesystem, and the container filesystem when separate, at the
// mountpoints the runtime's ImageFsInfo names.
func (o *CRIObserver) observeRuntimeFs(ctx context.Context, s *Stats, miss func(string, error)) {
	fsInfo, err := o.CRI.ImageFsInfo(ctx)
	if err != nil {
		miss("imagefs", fmt.Errorf("the runtime's ImageFsInfo: %w", err))
		return
	}
	imgs := fsInfo.GetImageFilesystems()
	if len(imgs) == 0 {
		miss("imagefs", fmt.Errorf("the runtime's ImageFsInfo names no image filesystem"))
		return
	}
	mount := imgs[0].GetFsId().GetMountpoint()
	img, err := o.Node.Statfs(mount)
	if err != nil {
		miss("imagefs", err)
	} else {
		s.ImageFs = &img
	}
	ctrs := fsInfo.GetContainerFilesystems()
	if !o.SeparateDiskGC || len(ctrs) == 0 || ctrs[0].GetFsId().GetMountpoint() == mount {
		return
	}
	cfs, err := o.Node.Statfs(ctrs[0].GetFsId().GetMountpoint())
	if err != nil {
		miss("containerfs", err)
		return
	}
	s.ContainerFs = &cfs
}

func sub(a, b uint64) uint64 {
	if b > a {
		return 0
	}
	return a - b
}

// PodStatsFromCRI turns the runtime's sandbox stats into pod usage, each pod known by the uid
// label the pod workers put on its sandbox; sandboxes without it are not the agent's.
func PodStatsFromCRI(sbs []*runtimeapi.PodSandboxStats) []PodStats {
	out := make([]PodStats, 0, len(sbs))
	// Every pod's containers are cut from one array: a round reads every pod's, and an
	// allocation a pod was most of the round's.
	n := 0
	for _, sb := range sbs {
		n += len(sb.GetLinux().GetContainers())
	}
	containers := make([]ContainerStats, 0, n)
	for _, sb := range sbs {
		uid := sb.GetAttributes().GetLabels()[labels.PodUID]
		if uid == "" {
			continue
		}
		lx := sb.GetLinux()
		ps := PodStats{
			UID:                   types.UID(uid),
			MemoryWorkingSetBytes: lx.GetMemory().GetWorkingSetBytes().GetValue(),
			MemoryUsageBytes:      lx.GetMemory().GetUsageBytes().GetValue(),
			Processes:             lx.GetProcess().GetProcessCount().GetValue(),
		}
		cs := lx.GetContainers()
		ps.Containers = containers[len(containers) : len(containers) : len(containers)+len(cs)]
		for _, c := range cs {
			ps.Containers = append(ps.Containers, ContainerStats{
				Name:                  c.GetAttributes().GetMetadata().GetName(),
				MemoryWorkingSetBytes: c.GetMemory().GetWorkingSetBytes().GetValue(),
				RootfsBytes:           c.GetWritableLayer().GetUsedBytes().GetValue(),
				RootfsInodes:          c.GetWritableLayer().GetInodesUsed().GetValue(),
			})
		}
		containers = containers[:len(containers)+len(cs)]
		if len(ps.Containers) == 0 {
			ps.Containers = nil
		}
		out = append(out, ps)
	}
	return out
}
