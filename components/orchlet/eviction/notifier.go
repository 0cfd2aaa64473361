package eviction

import (
	"fmt"
	"time"
)

// notifierRefreshInterval is how often the memory thresholds are armed again from a fresh
// observation (Kubernetes' notifierRefreshInterval): the inactive file pages they allow for move.
const notifierRefreshInterval = 10 * time.Second

// memoryUsageAttribute is the cgroup v1 file a memory threshold watches.
const memoryUsageAttribute = "memory.usage_in_bytes"

// CgroupNotifier tells when a cgroup attribute crosses a threshold (Kubernetes' CgroupNotifier).
type CgroupNotifier interface {
	// Start begins watching and returns; each crossing is then sent on eventCh, without
	// waiting when a notification is already pending there, until Stop.
	Start(eventCh chan<- struct{})
	// Stop ends the watch and frees what it holds.
	Stop()
}

// NotifierFactory arms a threshold on a cgroup attribute (Kubernetes' NotifierFactory): the
// kernel's on a real node, the simulated host's in the simulator.
type NotifierFactory interface {
	// NewCgroupNotifier watches attribute of the cgroup directory path for crossing threshold.
	NewCgroupNotifier(path, attribute string, threshold int64) (CgroupNotifier, error)
}

// MemcgNotifications is what --kernel-memcg-notification needs of the host: memory thresholds
// are then noticed when crossed, each making a round due at once, besides the 10 s rounds.
type MemcgNotifications struct {
	Factory NotifierFactory
	// MemoryRoot is the root memory cgroup's directory (memory.available is watched there);
	// PodsCgroup the pods' cgroup below it (allocatableMemory.available), as "/orchpods".
	MemoryRoot, PodsCgroup string
}

// memoryThresholdNotifier is Kubernetes' memory_threshold_notifier.go: one memory threshold,
// armed on its cgroup's usage again at each refresh.
type memoryThresholdNotifier struct {
	threshold  Threshold
	cgroupPath string
	factory    NotifierFactory
	notifier   CgroupNotifier
}

func newMemoryThresholdNotifier(t Threshold, n *MemcgNotifications) *memoryThresholdNotifier {
	path := n.MemoryRoot
	if t.Signal == SignalAllocatableMemoryAvailable {
		path += n.PodsCgroup
	}
	return &memoryThresholdNotifier{threshold: t, cgroupPath: path, factory: n.Factory}
}

// Description is Kubernetes': "hard memory eviction threshold", "soft allocatable memory ...".
func (m *memoryThresholdNotifier) Description() string {
	hard, allocatable := "soft ", ""
	if m.threshold.Hard() {
		hard = "hard "
	}
	if m.threshold.Signal == SignalAllocatableMemoryAvailable {
		allocatable = "allocatable "
	}
	return fmt.Sprintf("%s%smemory eviction threshold", hard, allocatable)
}

// updateThreshold arms the threshold on the cgroup's usage at capacity - threshold +
// inactive_file: usage counts inactive file pages and the working set does not, so the kernel
// notifies when the working set reaches capacity - threshold, where the signal is met.
func (m *memoryThresholdNotifier) updateThreshold(s Stats, events chan<- struct{}) error {
	mem := s.Memory
	if m.threshold.Signal == SignalAllocatableMemoryAvailable {
		mem = s.PodsMemory
	}
	if mem == nil {
		return fmt.Errorf("%s: %s was not observed", m.Description(), m.threshold.Signal)
	}
	capacity := bytesQ(mem.AvailableBytes + mem.WorkingSetBytes)
	memcg := capacity.DeepCopy()
	memcg.Sub(*m.threshold.Value.quantity(capacity))
	memcg.Add(*bytesQ(sub(mem.UsageBytes, mem.WorkingSetBytes)))
	if m.notifier != nil {
		m.notifier.Stop()
		m.notifier = nil
	}
	n, err := m.factory.NewCgroupNotifier(m.cgroupPath, memoryUsageAttribute, memcg.Value())
	if err != nil {
		return err
	}
	m.notifier = n
	n.Start(events)
	return nil
}

func (m *memoryThresholdNotifier) stop() {
	if m.notifier != nil {
		m.notifier.Stop()
		m.notifier = nil
	}
}
