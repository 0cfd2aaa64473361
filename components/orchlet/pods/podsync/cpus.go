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

// assignCPUs puts the CPU manager's cpuset for c in cfg, as the kubelet's PreCreateContainer
// does; a container it cannot give CPUs is not created.
func (s *Syncer) assignCPUs(pod *corev1.Pod, c *corev1.Container, cfg *runtimeapi.ContainerConfig) error {
	if s.cpus == nil {
		return nil
	}
	set, err := s.cpus.CPUSet(pod, c)
	if err != nil {
		return fmt.Errorf("cpu manager: %w", err)
	}
	if set == "" {
		return nil
	}
	if cfg.Linux == nil {
		cfg.Linux = &runtimeapi.LinuxContainerConfig{}
	}
	if cfg.Linux.Resources == nil {
		cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{}
	}
	cfg.Linux.Resources.CpusetCpus = set
	return nil
}
