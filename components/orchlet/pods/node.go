package pods

import "orch.io/orch/components/orchlet/pods/qos"

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
	Tmpfs Mounter
	// SubPaths bind-mounts each volume mount's subPath where the runtime mounts it from, as the
	// kubelet's subpather does; nil gives the runtime the path below the volume itself.
	SubPaths SubPathMounter
}

// SubPathMounter is the kubelet's subpath.Interface on a host that can mount.
type SubPathMounter interface {
	// BindSubPath opens subPath below volume without following a symlink at any step, so that
	// what it opens cannot lie outside the volume, and bind-mounts it on target, made as a file or
	// a directory as the source is. A target that is already mounted is mounted again.
	BindSubPath(volume, subPath, target string) error
	// Unmount undoes BindSubPath; a target that is not mounted is not an error.
	Unmount(target string) error
}

// Mounter mounts the tmpfs of an emptyDir volume of medium Memory, as the kubelet's empty_dir
// plugin does; a host that cannot is given none, and such volumes are refused.
type Mounter interface {
	// MountTmpfs mounts a tmpfs at dir, of at most size bytes when size is positive.
	MountTmpfs(dir string, size int64) error
	// Unmount undoes MountTmpfs.
	Unmount(dir string) error
}
