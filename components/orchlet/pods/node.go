package pods

import (
	"fmt"
	"strings"
	"time"

	"orch.io/orch/components/apis/orchlet/v1beta1"
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
	Cgroups PodCgroups
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

// resourceSettings are the cgroup and resource options, read once.
type resourceSettings struct {
	perQOS, systemd bool
	root            []string // the --cgroup-root's components
	cfsQuota        bool
	cfsPeriod       int64 // microseconds
	pidsLimit       int64
	cgroupV2        bool
	memoryCapacity  int64
	hugePageSizes   []string
}

// newResourceSettings reads --cgroups-per-qos, --cgroup-driver, --cgroup-root, --cpu-cfs-quota,
// --cpu-cfs-quota-period and --pod-max-pids as the kubelet does, refusing what it refuses.
func newResourceSettings(c *v1beta1.OrchletConfiguration, n Node) (resourceSettings, error) {
	s := resourceSettings{
		perQOS: c.CgroupsPerQOS, cfsQuota: c.CPUCFSQuota, pidsLimit: c.PodPidsLimit,
		cgroupV2: n.CgroupV2, memoryCapacity: n.MemoryCapacity, hugePageSizes: n.HugePageSizes,
		cfsPeriod: quotaPeriod,
	}
	switch c.CgroupDriver {
	case "", "cgroupfs":
	case "systemd":
		s.systemd = true
	default:
		return s, fmt.Errorf("pods: --cgroup-driver (cgroupDriver) %q: must be cgroupfs or systemd", c.CgroupDriver)
	}
	if p := c.CPUCFSQuotaPeriod.Duration; p != 0 {
		if p < time.Millisecond || p > time.Second {
			return s, fmt.Errorf("pods: --cpu-cfs-quota-period (cpuCFSQuotaPeriod) %v: must be between 1ms and 1s", p)
		}
		s.cfsPeriod = int64(p / time.Microsecond)
	}
	// The kubelet defaults the root to / when --cgroups-per-qos is on and none is given.
	root := c.CgroupRoot
	if root != "" && !strings.HasPrefix(root, "/") {
		return s, fmt.Errorf("pods: --cgroup-root (cgroupRoot) %q: must be an absolute path", root)
	}
	for _, p := range strings.Split(root, "/") {
		if p != "" {
			s.root = append(s.root, p)
		}
	}
	if s.systemd && len(s.root) > 0 {
		// ParseCgroupfsToCgroupName keeps a slice path's components whole, which ToSystemd then
		// cannot expand into the slice the user meant.
		return s, fmt.Errorf("pods: --cgroup-root (cgroupRoot) %q: with --cgroup-driver=systemd only / is supported", root)
	}
	return s, nil
}

// Mounter mounts the tmpfs of an emptyDir volume of medium Memory, as the kubelet's empty_dir
// plugin does; a host that cannot is given none, and such volumes are refused.
type Mounter interface {
	// MountTmpfs mounts a tmpfs at dir, of at most size bytes when size is positive.
	MountTmpfs(dir string, size int64) error
	// Unmount undoes MountTmpfs.
	Unmount(dir string) error
}
