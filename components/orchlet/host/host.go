package host

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
)

// Host answers questions about the machine.
type Host interface {
	// SwapOn reports whether any swap device or file is active.
	SwapOn() (bool, error)
	// CgroupVersion returns 1 or 2: 2 only when the unified hierarchy is mounted at the cgroup root.
	CgroupVersion() (int, error)
	// Sysctl reads an integer kernel tunable named as under /proc/sys, for example "vm/overcommit_memory".
	Sysctl(name string) (int, error)
	// Hostname returns the kernel's host name.
	Hostname() (string, error)
	// Lock takes the exclusive lock on path without waiting; ErrLocked means another process holds it.
	Lock(path string) (Lock, error)
	// Memory is the machine's memory in bytes (MemTotal).
	Memory() (int64, error)
	// SystemInfo is what the machine tells of itself, as the kubelet reads it: machine ID, system
	// UUID, boot ID, kernel version and OS image; what cannot be read (a container without
	// /etc/machine-id) stays empty.
	SystemInfo() corev1.NodeSystemInfo
	// HugePageSizes are the sizes in bytes of the huge pages the kernel offers, in sysfs's order.
	HugePageSizes() []int64
	// HugePageTotals are the huge pages the kernel holds (nr_hugepages), by size in bytes.
	HugePageTotals() map[int64]int64
	// SELinux reports whether SELinux is enabled.
	SELinux() bool
	// ThermalThrottlePaths are the thermal_throttle directories of the possible CPUs that exist,
	// named as under /sys, which the kubelet masks in containers.
	ThermalThrottlePaths() []string
	// Procfs and Sysfs are where procfs and sysfs are mounted; both are empty on a machine that is
	// only simulated (a test's), where the agent makes no cgroup or mount and reads nothing there.
	Procfs() string
	Sysfs() string
}

// Lock is a held lock file.
type Lock interface {
	// Contended is closed when another process opens the lock file to take it.
	Contended() <-chan struct{}
	// Release gives the lock up.
	Release() error
}

// ErrLocked is returned by Host.Lock when another process holds the lock.
var ErrLocked = errors.New("held by another process")
