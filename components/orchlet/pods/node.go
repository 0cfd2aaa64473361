package pods

import (
	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/orchlet/pods/images"
	"orch.io/orch/components/orchlet/pods/qos"
	"orch.io/orch/components/orchlet/pods/volumes"
)

// Node is what the pod workers know of the machine and of the agent's command line beyond its
// configuration file. The zero value is a simulated node: no cgroups made, volumes under a
// temporary root, cgroup v1, no huge pages.
type Node struct {
	// Name is the node's name, spec.nodeName for the downward API.
	Name string
	// HostIPs are the node's addresses, status.hostIP(s) for the downward API.
	HostIPs []string
	// RootDir is --root-dir: pod volumes live under RootDir/pods/<uid>/volumes. Empty: a
	// temporary directory of the Manager's own, removed when Run ends.
	RootDir string
	// SeccompDefault is --seccomp-default: RuntimeDefault for containers that name no profile.
	SeccompDefault bool
	// MemoryCapacity is the machine's memory in bytes, for Burstable containers' OOM score.
	MemoryCapacity int64
	// CgroupV2 says the unified hierarchy is mounted, where the kubelet asks for memory.oom.group.
	CgroupV2 bool
	// ThermalThrottlePaths are the host's /sys/devices/system/cpu/cpu<N>/thermal_throttle
	// directories, masked in containers as the kubelet masks them.
	ThermalThrottlePaths []string
	// HugePageSizes are the host's huge page sizes as Kubernetes names them ("2MB", "1GB").
	HugePageSizes []string
	// SELinux says the host enforces SELinux, where the kubelet asks for volumes to be relabelled.
	SELinux bool
	// Cgroups makes and removes pod cgroups on a real host; nil leaves them to the runtime.
	Cgroups qos.PodCgroups
	// Tmpfs mounts emptyDir volumes of medium Memory; nil refuses them.
	Tmpfs volumes.Mounter
	// SubPaths bind-mounts each volume mount's subPath where the runtime mounts it from, as the
	// kubelet's subpather does; nil gives the runtime the path below the volume itself.
	SubPaths volumes.SubPathMounter
	// Flex runs flexVolume drivers (--volume-plugin-dir); nil refuses flexVolume volumes.
	Flex volumes.FlexDrivers
	// Credentials are the credential provider plugins (--image-credential-provider-config),
	// asked for an image's credentials after its pod's pull secrets; nil: none.
	Credentials images.Plugins
	// Allocatable is what the node's pods may request together (the container manager's node
	// allocatable): a pod requesting more than the admitted pods leave is refused, OutOf<resource>.
	// Nil admits by the pods' count only.
	Allocatable corev1.ResourceList
}
