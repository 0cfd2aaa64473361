package eviction

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// Stats is one observation of the node and its pods: the part of Kubernetes' stats summary the
// eviction manager reads. A nil part was not observed; its signals are not evaluated.
type Stats struct {
	// Memory is the node's: capacity minus working set is what memory.available sees.
	Memory *MemoryStats
	// PodsMemory is the pods' together against node allocatable (allocatableMemory.available).
	PodsMemory *MemoryStats
	NodeFs     *FsStats
	// ImageFs is where images live; nil or equal to NodeFs when they share a device.
	ImageFs *FsStats
	// ContainerFs is where writable layers live when the runtime splits it from ImageFs
	// (OrchletSeparateDiskGC); nil otherwise.
	ContainerFs *FsStats
	Pids        *PidStats
	Pods        []PodStats
	// Unobserved names each part that could not be read and why ("imagefs: ..."); the signals
	// of a part named here are not evaluated.
	Unobserved []string
}

// unobserved tells whether part ("memory", "nodefs", "imagefs", "containerfs", "pid") could not
// be read.
func (s Stats) unobserved(part string) bool {
	for _, u := range s.Unobserved {
		if strings.HasPrefix(u, part+":") {
			return true
		}
	}
	return false
}

// MemoryStats: Available is what is left of the capacity after the working set; Usage is the
// memory cgroup's usage, inactive file pages included, which a kernel notification watches.
type MemoryStats struct {
	AvailableBytes, WorkingSetBytes, UsageBytes uint64
}

// FsStats is a filesystem's bytes and inodes.
type FsStats struct {
	AvailableBytes, CapacityBytes uint64
	InodesFree, Inodes            uint64
}

// PidStats: MaxPID is pid_max, Running the processes on the node.
type PidStats struct {
	MaxPID, Running uint64
}

// PodStats is one pod's usage.
type PodStats struct {
	UID types.UID
	// MemoryWorkingSetBytes is the pod's, its containers' and its sandbox's.
	MemoryWorkingSetBytes uint64
	// MemoryUsageBytes counts inactive file pages too, as the pod cgroup's usage does.
	MemoryUsageBytes uint64
	Processes        uint64
	Containers       []ContainerStats
	// Volumes are the pod's local volumes (emptyDir) on nodefs.
	Volumes []VolumeStats
}

// ContainerStats is one container's usage: working set, writable layer (rootfs) and logs.
type ContainerStats struct {
	Name                   string
	MemoryWorkingSetBytes  uint64
	RootfsBytes, LogsBytes uint64
	RootfsInodes           uint64
	LogsInodes             uint64
}

// VolumeStats is one local volume's usage.
type VolumeStats struct {
	Name              string
	UsedBytes, Inodes uint64
}

// observation is helpers.go's signalObservation: what is available and out of what capacity.
type observation struct {
	available, capacity *resource.Quantity
}

func bytesQ(v uint64) *resource.Quantity { return resource.NewQuantity(int64(v), resource.BinarySI) }
func countQ(v uint64) *resource.Quantity { return resource.NewQuantity(int64(v), resource.DecimalSI) }

// makeSignalObservations is helpers.go's: each signal's available and capacity from the stats.
// Without a separate imagefs, the imagefs signals observe nodefs (the summary reports the same
// filesystem twice); containerfs observes imagefs when split off nodefs and nodefs otherwise,
// unless the runtime reports a containerfs of its own.
//
// The quantities are made in one array (at most nine signals, two each): one allocation where
// a quantity each was eighteen at every synchronize of every node.
func makeSignalObservations(s Stats) map[Signal]observation {
	o := map[Signal]observation{}
	qs := make([]resource.Quantity, 0, 18)
	q := func(v uint64, f resource.Format) *resource.Quantity {
		qs = append(qs, resource.Quantity{})
		p := &qs[len(qs)-1]
		*p = *resource.NewQuantity(int64(v), f)
		return p
	}
	bytesQ := func(v uint64) *resource.Quantity { return q(v, resource.BinarySI) }
	countQ := func(v uint64) *resource.Quantity { return q(v, resource.DecimalSI) }
	if m := s.Memory; m != nil {
		o[SignalMemoryAvailable] = observation{bytesQ(m.AvailableBytes), bytesQ(m.AvailableBytes + m.WorkingSetBytes)}
	}
	if m := s.PodsMemory; m != nil {
		o[SignalAllocatableMemoryAvailable] = observation{bytesQ(m.AvailableBytes), bytesQ(m.AvailableBytes + m.WorkingSetBytes)}
	}
	fs := func(f *FsStats, bytes, inodes Signal) {
		if f == nil {
			return
		}
		o[bytes] = observation{bytesQ(f.AvailableBytes), bytesQ(f.CapacityBytes)}
		o[inodes] = observation{countQ(f.InodesFree), countQ(f.Inodes)}
	}
	fs(s.NodeFs, SignalNodeFsAvailable, SignalNodeFsInodesFree)
	img := s.ImageFs
	if img == nil && !s.unobserved("imagefs") {
		img = s.NodeFs
	}
	fs(img, SignalImageFsAvailable, SignalImageFsInodesFree)
	ctr := s.ContainerFs
	if ctr == nil && !s.unobserved("containerfs") {
		ctr = img
	}
	fs(ctr, SignalContainerFsAvailable, SignalContainerFsInodesFree)
	if p := s.Pids; p != nil {
		avail := uint64(0)
		if p.MaxPID > p.Running {
			avail = p.MaxPID - p.Running
		}
		o[SignalPIDAvailable] = observation{countQ(avail), countQ(p.MaxPID)}
	}
	return o
}
