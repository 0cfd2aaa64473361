package qos

import (
	"fmt"
	"strings"

	"orch.io/orch/components/orchlet/sources"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Kubernetes' CPU and OOM constants (pkg/kubelet/cm/helpers_linux.go, pkg/kubelet/qos/policy.go).
const (
	minShares     = 2
	maxShares     = 262144
	sharesPerCPU  = 1024
	milliCPUToCPU = 1000
	// quotaPeriod is the CFS period in microseconds when --cpu-cfs-quota-period is not given.
	quotaPeriod    = 100000
	minQuotaPeriod = 1000

	guaranteedOOMScoreAdj = -997
	besteffortOOMScoreAdj = 1000

	// systemCriticalPriority is the lowest priority of a critical pod (scheduling.SystemCriticalPriority).
	systemCriticalPriority = 2 * 1000000000
)

// Cgroup names of the pod hierarchy: Kubernetes' kubepods, renamed.
const (
	nodeAllocatableCgroup = "orchpods"
	burstableCgroup       = "burstable"
	bestEffortCgroup      = "besteffort"
)

// MilliCPUToShares is cm.MilliCPUToShares: cpu.shares from a CPU request or reservation.
func MilliCPUToShares(milliCPU int64) int64 {
	if milliCPU == 0 {
		return minShares
	}
	shares := milliCPU * sharesPerCPU / milliCPUToCPU
	return min(max(shares, minShares), maxShares)
}

// milliCPUToQuota is kuberuntime's milliCPUToQuota: the CFS quota of a CPU limit over period.
func milliCPUToQuota(milliCPU, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	return max(milliCPU*period/milliCPUToCPU, minQuotaPeriod)
}

// podQOS is Kubernetes' ComputePodQOS (pkg/apis/core/v1/helper/qos) over the CPU and memory of
// every container, init ones included.
func podQOS(pod *corev1.Pod) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	all := append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, c := range all {
		for name, q := range c.Resources.Requests {
			if (name == corev1.ResourceCPU || name == corev1.ResourceMemory) && q.Sign() > 0 {
				addQuantity(requests, name, q)
			}
		}
		found := 0
		for name, q := range c.Resources.Limits {
			if (name == corev1.ResourceCPU || name == corev1.ResourceMemory) && q.Sign() > 0 {
				found++
				addQuantity(limits, name, q)
			}
		}
		if found < 2 {
			guaranteed = false
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return corev1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

func addQuantity(list corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	sum := list[name]
	sum.Add(q)
	list[name] = sum
}

// isCriticalPod is kubelettypes.IsCriticalPod: a static or mirror pod, or one of critical priority.
func isCriticalPod(pod *corev1.Pod) bool {
	if sources.IsStatic(pod) || pod.Annotations[mirrorPodAnnotation] != "" {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority
}

// mirrorPodAnnotation marks a static pod's mirror in the API (kubernetes.io/config.mirror renamed).
const mirrorPodAnnotation = "orch.io/config.mirror"

// oomScoreAdjust is qos.GetContainerOOMScoreAdjust: node-critical and Guaranteed containers are
// killed last, BestEffort first, and a Burstable one by the share of the node's memory it
// requests, a sidecar no higher than the smallest regular container.
func oomScoreAdjust(pod *corev1.Pod, c *corev1.Container, memoryCapacity int64) int64 {
	if isCriticalPod(pod) && pod.Spec.PriorityClassName == "system-node-critical" {
		return guaranteedOOMScoreAdj
	}
	switch podQOS(pod) {
	case corev1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case corev1.PodQOSBestEffort:
		return besteffortOOMScoreAdj
	}
	score := func(request int64) int64 {
		if memoryCapacity <= 0 {
			// Unknown capacity (a simulated node): as a container requesting nothing.
			return 1000
		}
		return 1000 - 1000*request/memoryCapacity
	}
	adj := score(c.Resources.Requests.Memory().Value())
	if isSidecar(pod, c) {
		if m := score(minRegularContainerMemory(pod)); adj > m {
			adj = m
		}
	}
	if adj < 1000+guaranteedOOMScoreAdj {
		return 1000 + guaranteedOOMScoreAdj
	}
	if adj == besteffortOOMScoreAdj {
		return adj - 1
	}
	return adj
}

func isSidecar(pod *corev1.Pod, c *corev1.Container) bool {
	if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return true
		}
	}
	return false
}

// minRegularContainerMemory is policy.go's: the smallest memory request of the app containers.
func minRegularContainerMemory(pod *corev1.Pod) int64 {
	var least *int64
	for _, c := range pod.Spec.Containers {
		v := c.Resources.Requests.Memory().Value()
		if least == nil || v < *least {
			least = &v
		}
	}
	if least == nil {
		return 0
	}
	return *least
}

// linuxResources is kuberuntime's calculateLinuxResources: shares from the request (the limit
// when no request is given), the memory limit, and with --cpu-cfs-quota the quota of the limit
// over --cpu-cfs-quota-period; on cgroup v2 the kernel is asked to kill the whole cgroup on OOM.
func (m *Manager) linuxResources(cpuRequest, cpuLimit, memoryLimit *resource.Quantity) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{}
	if cpuRequest == nil && cpuLimit != nil {
		r.CpuShares = MilliCPUToShares(cpuLimit.MilliValue())
	} else {
		r.CpuShares = MilliCPUToShares(cpuRequest.MilliValue())
	}
	r.MemoryLimitInBytes = memoryLimit.Value()
	if m.cfsQuota {
		r.CpuPeriod = m.cfsPeriod
		r.CpuQuota = milliCPUToQuota(cpuLimit.MilliValue(), m.cfsPeriod)
	}
	if m.cgroupV2 {
		r.Unified = map[string]string{"memory.oom.group": "1"}
	}
	return r
}

// ContainerResources is kuberuntime's generateLinuxContainerResources.
func (m *Manager) ContainerResources(pod *corev1.Pod, c *corev1.Container) *runtimeapi.LinuxContainerResources {
	var cpuRequest *resource.Quantity
	if _, ok := c.Resources.Requests[corev1.ResourceCPU]; ok {
		cpuRequest = c.Resources.Requests.Cpu()
	}
	r := m.linuxResources(cpuRequest, c.Resources.Limits.Cpu(), c.Resources.Limits.Memory())
	r.OomScoreAdj = oomScoreAdjust(pod, c, m.memoryCapacity)
	r.HugepageLimits = m.hugepageLimits(c.Resources)
	return r
}

// hugepageLimits is GetHugepageLimitsFromResources: every page size the host has, limited to 0
// unless the container's limits name it.
func (m *Manager) hugepageLimits(res corev1.ResourceRequirements) []*runtimeapi.HugepageLimit {
	want := map[string]uint64{}
	for name, q := range res.Limits {
		if !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			continue
		}
		size, err := resource.ParseQuantity(strings.TrimPrefix(string(name), corev1.ResourceHugePagesPrefix))
		if err != nil {
			continue
		}
		want[HugePageUnitSize(size.Value())] = uint64(q.Value())
	}
	var out []*runtimeapi.HugepageLimit
	for _, size := range m.hugePageSizes {
		out = append(out, &runtimeapi.HugepageLimit{PageSize: size, Limit: want[size]})
	}
	return out
}

// HugePageUnitSize is v1helper.HugePageUnitSizeFromByteSize: 2097152 is "2MB".
func HugePageUnitSize(size int64) string {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	i := 0
	for size >= 1024 && size%1024 == 0 && i < len(units)-1 {
		size /= 1024
		i++
	}
	return fmt.Sprintf("%d%s", size, units[i])
}

// SandboxResources is kuberuntime's calculateSandboxResources (the pod's requests and limits
// without overhead) and convertOverheadToLinuxResources (the overhead as requests equal limits).
func (m *Manager) SandboxResources(pod *corev1.Pod) (res, overhead *runtimeapi.LinuxContainerResources) {
	opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true}
	req, lim := resourcehelper.PodRequests(pod, opts), resourcehelper.PodLimits(pod, opts)
	var cpuRequest *resource.Quantity
	if _, ok := req[corev1.ResourceCPU]; ok {
		cpuRequest = req.Cpu()
	}
	res = m.linuxResources(cpuRequest, lim.Cpu(), lim.Memory())
	overhead = &runtimeapi.LinuxContainerResources{}
	if pod.Spec.Overhead != nil {
		cpu := pod.Spec.Overhead.Cpu()
		overhead = m.linuxResources(cpu, cpu, pod.Spec.Overhead.Memory())
	}
	return res, overhead
}
