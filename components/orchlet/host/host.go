package host

import "errors"

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
