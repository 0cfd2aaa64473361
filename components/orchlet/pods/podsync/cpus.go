package podsync

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CPUAssigner picks the cpuset a container runs on before it is created: the CPU manager's. An
// empty cpuset leaves the runtime's default.
type CPUAssigner interface {
	CPUSet(pod *corev1.Pod, c *corev1.Container) (string, error)
}

// MemoryAssigner picks the NUMA nodes a container's memory comes from before it is created: the
// memory manager's cpuset.mems. An empty one leaves the runtime's default.
type MemoryAssigner interface {
	CpusetMems(pod *corev1.Pod, c *corev1.Container) string
}

// assignCPUs puts the CPU manager's cpuset and the memory manager's cpuset.mems for c in cfg, as
// the kubelet's PreCreateContainer does; a container it cannot give CPUs is not created.
func (s *Syncer) assignCPUs(pod *corev1.Pod, c *corev1.Container, cfg *runtimeapi.ContainerConfig) error {
	var set, mems string
	if s.cpus != nil {
		var err error
		if set, err = s.cpus.CPUSet(pod, c); err != nil {
			return fmt.Errorf("cpu manager: %w", err)
		}
	}
	if s.memory != nil {
		mems = s.memory.CpusetMems(pod, c)
	}
	if set == "" && mems == "" {
		return nil
	}
	if cfg.Linux == nil {
		cfg.Linux = &runtimeapi.LinuxContainerConfig{}
	}
	if cfg.Linux.Resources == nil {
		cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{}
	}
	if set != "" {
		cfg.Linux.Resources.CpusetCpus = set
	}
	if mems != "" {
		cfg.Linux.Resources.CpusetMems = mems
	}
	return nil
}
