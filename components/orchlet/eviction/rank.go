package eviction

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"orch.io/orch/components/orchlet/sources"
)

// SystemCriticalPriority is scheduling.SystemCriticalPriority: a pod at or above it is critical.
const SystemCriticalPriority int32 = 2000000000

// MirrorAnnotation marks a mirror pod (Kubernetes' kubernetes.io/config.mirror, renamed).
const MirrorAnnotation = "orchlet.orch.io/config.mirror"

// IsCriticalPod is kubelettypes.IsCriticalPod: static and mirror pods, and pods at or above the
// system-critical priority, are never evicted and are admitted under pressure.
func IsCriticalPod(pod *corev1.Pod) bool {
	if src, ok := pod.Annotations[sources.ConfigSourceAnnotation]; ok && src != sources.SourceAPI {
		return true
	}
	if _, ok := pod.Annotations[MirrorAnnotation]; ok {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}

// podPriority is corev1helpers.PodPriority.
func podPriority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// containerRequest is a container's request, or its limit when it gives none (the API's defaulting
// of requests from limits, which a manifest file does not go through).
func containerRequest(c *corev1.Container, name corev1.ResourceName) resource.Quantity {
	if q, ok := c.Resources.Requests[name]; ok {
		return q
	}
	return c.Resources.Limits[name]
}

// podRequest is v1resource.GetResourceRequestQuantity: the containers' sum, at least each init
// container's, plus the overhead.
func podRequest(pod *corev1.Pod, name corev1.ResourceName) resource.Quantity {
	var sum resource.Quantity
	for i := range pod.Spec.Containers {
		sum.Add(containerRequest(&pod.Spec.Containers[i], name))
	}
	for i := range pod.Spec.InitContainers {
		if q := containerRequest(&pod.Spec.InitContainers[i], name); q.Cmp(sum) > 0 {
			sum = q
		}
	}
	if q, ok := pod.Spec.Overhead[name]; ok {
		sum.Add(q)
	}
	return sum
}

// isBestEffort is qos.GetPodQOS == BestEffort: no container requests or limits cpu or memory.
func isBestEffort(pod *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, l := range []corev1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
					if q, ok := l[n]; ok && !q.IsZero() {
						return false
					}
				}
			}
		}
	}
	return true
}

// candidate is an active pod and its stats (nil when it was not observed).
type candidate struct {
	pod   *corev1.Pod
	stats *PodStats
}

type cmpFunc func(a, b *candidate) int

// orderedBy is helpers.go's multiSorter: the first comparison that tells two pods apart decides.
// The sort is stable, so pods alike in every comparison keep their input order.
func orderedBy(cmps ...cmpFunc) func([]*candidate) {
	return func(cs []*candidate) {
		slices.SortStableFunc(cs, func(a, b *candidate) int {
			for _, c := range cmps {
				if r := c(a, b); r != 0 {
					return r
				}
			}
			return 0
		})
	}
}

// cmpBool is helpers.go's: true sorts first.
func cmpBool(a, b bool) int {
	if a == b {
		return 0
	}
	if !b {
		return -1
	}
	return 1
}

// priority is helpers.go's: lower priority first.
func priority(a, b *candidate) int {
	pa, pb := podPriority(a.pod), podPriority(b.pod)
	switch {
	case pa == pb:
		return 0
	case pa > pb:
		return 1
	}
	return -1
}

func memoryUsage(s *PodStats) *resource.Quantity { return bytesQ(s.MemoryWorkingSetBytes) }

// exceedMemoryRequests is helpers.go's: pods without stats first, then those using more memory
// than they request.
func exceedMemoryRequests(a, b *candidate) int {
	if a.stats == nil || b.stats == nil {
		return cmpBool(a.stats == nil, b.stats == nil)
	}
	ra, rb := podRequest(a.pod, corev1.ResourceMemory), podRequest(b.pod, corev1.ResourceMemory)
	return cmpBool(memoryUsage(a.stats).Cmp(ra) == 1, memoryUsage(b.stats).Cmp(rb) == 1)
}

// memory is helpers.go's: the larger usage above requests first.
func memory(a, b *candidate) int {
	if a.stats == nil || b.stats == nil {
		return cmpBool(a.stats == nil, b.stats == nil)
	}
	ua, ub := memoryUsage(a.stats), memoryUsage(b.stats)
	ra, rb := podRequest(a.pod, corev1.ResourceMemory), podRequest(b.pod, corev1.ResourceMemory)
	ua.Sub(ra)
	ub.Sub(rb)
	return ub.Cmp(*ua)
}

// process is helpers.go's: more processes first.
func process(a, b *candidate) int {
	if a.stats == nil || b.stats == nil {
		return cmpBool(a.stats == nil, b.stats == nil)
	}
	switch pa, pb := a.stats.Processes, b.stats.Processes; {
	case pa == pb:
		return 0
	case pa > pb:
		return -1
	}
	return 1
}

// rankMemoryPressure is helpers.go's: exceeds requests, then priority, then usage above requests.
var rankMemoryPressure = orderedBy(exceedMemoryRequests, priority, memory)

// rankPIDPressure is helpers.go's: priority, then process count.
var rankPIDPressure = orderedBy(priority, process)

// fsStatsType is helpers.go's: which of a pod's disk usage a signal measures.
type fsStatsType int

const (
	fsStatsRoot fsStatsType = iota
	fsStatsLogs
	fsStatsLocalVolumeSource
)

// podDiskUsage is helpers.go's: the measured parts' bytes (ephemeral-storage) and inodes.
func podDiskUsage(s *PodStats, measure []fsStatsType) (bytes, inodes *resource.Quantity) {
	var b, i uint64
	for _, c := range s.Containers {
		if slices.Contains(measure, fsStatsRoot) {
			b += c.RootfsBytes
			i += c.RootfsInodes
		}
		if slices.Contains(measure, fsStatsLogs) {
			b += c.LogsBytes
			i += c.LogsInodes
		}
	}
	if slices.Contains(measure, fsStatsLocalVolumeSource) {
		for _, v := range s.Volumes {
			b += v.UsedBytes
			i += v.Inodes
		}
	}
	return bytesQ(b), countQ(i)
}

func diskUsage(s *PodStats, measure []fsStatsType, res corev1.ResourceName) *resource.Quantity {
	b, i := podDiskUsage(s, measure)
	if res == resourceInodes {
		return i
	}
	return b
}

// rankDiskPressureFunc is helpers.go's: exceeds its ephemeral-storage request, then priority,
// then usage above the request.
func rankDiskPressureFunc(measure []fsStatsType, res corev1.ResourceName) func([]*candidate) {
	exceeds := func(a, b *candidate) int {
		if a.stats == nil || b.stats == nil {
			return cmpBool(a.stats == nil, b.stats == nil)
		}
		ra, rb := podRequest(a.pod, corev1.ResourceEphemeralStorage), podRequest(b.pod, corev1.ResourceEphemeralStorage)
		return cmpBool(diskUsage(a.stats, measure, res).Cmp(ra) == 1, diskUsage(b.stats, measure, res).Cmp(rb) == 1)
	}
	disk := func(a, b *candidate) int {
		if a.stats == nil || b.stats == nil {
			return cmpBool(a.stats == nil, b.stats == nil)
		}
		ua, ub := diskUsage(a.stats, measure, res), diskUsage(b.stats, measure, res)
		ra, rb := podRequest(a.pod, corev1.ResourceEphemeralStorage), podRequest(b.pod, corev1.ResourceEphemeralStorage)
		ua.Sub(ra)
		ub.Sub(rb)
		return ub.Cmp(*ua)
	}
	return orderedBy(exceeds, priority, disk)
}

// diskLayout says which filesystems are separate, as the eviction manager learns it at start.
type diskLayout struct {
	withImageFs, split bool
}

func layoutOf(s Stats) diskLayout {
	withImageFs := s.ImageFs != nil && s.NodeFs != nil && *s.ImageFs != *s.NodeFs
	return diskLayout{withImageFs: withImageFs, split: withImageFs && s.ContainerFs != nil && *s.ContainerFs != *s.ImageFs}
}

// rankFunc is buildSignalToRankFunc's choice for signal on this layout.
func (l diskLayout) rankFunc(signal Signal) func([]*candidate) {
	all := []fsStatsType{fsStatsRoot, fsStatsLogs, fsStatsLocalVolumeSource}
	var measure []fsStatsType
	switch res := signalToResource[signal]; res {
	case corev1.ResourceMemory:
		return rankMemoryPressure
	case resourcePids:
		return rankPIDPressure
	default:
		nodefs := signal == SignalNodeFsAvailable || signal == SignalNodeFsInodesFree
		imagefs := signal == SignalImageFsAvailable || signal == SignalImageFsInodesFree
		switch {
		case l.withImageFs && !l.split && nodefs:
			measure = []fsStatsType{fsStatsLogs, fsStatsLocalVolumeSource}
		case l.withImageFs && !l.split:
			measure = []fsStatsType{fsStatsRoot}
		case l.split && imagefs:
			measure = []fsStatsType{}
		default:
			measure = all
		}
		return rankDiskPressureFunc(measure, res)
	}
}

// Reclaim is the node-level reclaim the core asks for before evicting under disk pressure.
type Reclaim struct {
	// Containers: delete every dead container and sandbox (ContainerGC.DeleteAllUnusedContainers).
	Containers bool
	// Images: delete every unused image (ImageGC.DeleteUnusedImages).
	Images bool
}

// reclaimFor is buildSignalToNodeReclaimFuncs' choice for signal on this layout.
func (l diskLayout) reclaimFor(signal Signal) Reclaim {
	switch signal {
	case SignalNodeFsAvailable, SignalNodeFsInodesFree, SignalContainerFsAvailable, SignalContainerFsInodesFree:
		switch {
		case l.split:
			return Reclaim{Containers: true}
		case l.withImageFs:
			if signal == SignalContainerFsAvailable || signal == SignalContainerFsInodesFree {
				return Reclaim{Containers: true, Images: true}
			}
			return Reclaim{}
		}
		return Reclaim{Containers: true, Images: true}
	case SignalImageFsAvailable, SignalImageFsInodesFree:
		if l.split {
			return Reclaim{Images: true}
		}
		return Reclaim{Containers: true, Images: true}
	}
	return Reclaim{}
}
