package host

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Fake is a host whose answers are its fields; tests set them directly. Errors, when set, are
// returned instead of the matching answer. Without ProcRoot and SysRoot it is a simulated machine.
type Fake struct {
	Swap      bool
	Cgroup    int
	Sysctls   map[string]int
	Name      string
	SwapErr   error
	CgroupErr error
	// MemoryBytes is Memory's answer, or MemoryErr.
	MemoryBytes int64
	MemoryErr   error
	// System is SystemInfo's answer.
	System corev1.NodeSystemInfo
	// HugePages, HugePageTotal, SELinuxEnabled and Thermal are HugePageSizes',
	// HugePageTotals', SELinux's and ThermalThrottlePaths' answers.
	HugePages      []int64
	HugePageTotal  map[int64]int64
	SELinuxEnabled bool
	Thermal        []string
	// ProcRoot and SysRoot are Procfs's and Sysfs's answers.
	ProcRoot, SysRoot string

	mu        sync.Mutex
	held      map[string]bool // lock paths held, by another process or through Lock
	fakeLocks map[string]*FakeLock
}

// NewFake returns a simulated host that passes every start-up check: no swap, cgroup v2,
// Kubernetes' kernel defaults, named "fake-node", with 8 GiB of memory.
func NewFake() *Fake {
	sysctls := make(map[string]int, len(KernelDefaults))
	for k, v := range KernelDefaults {
		sysctls[k] = v
	}
	return &Fake{
		Cgroup: 2, Sysctls: sysctls, Name: "fake-node", MemoryBytes: 8 << 30,
		System: corev1.NodeSystemInfo{KernelVersion: "6.1.0-fake", OSImage: "Fake Linux"},
		held:   map[string]bool{}, fakeLocks: map[string]*FakeLock{},
	}
}

// SwapOn returns Swap, or SwapErr.
func (f *Fake) SwapOn() (bool, error) { return f.Swap, f.SwapErr }

// CgroupVersion returns Cgroup, or CgroupErr.
func (f *Fake) CgroupVersion() (int, error) { return f.Cgroup, f.CgroupErr }

// Hostname returns Name.
func (f *Fake) Hostname() (string, error) { return f.Name, nil }

// Memory returns MemoryBytes, or MemoryErr.
func (f *Fake) Memory() (int64, error) { return f.MemoryBytes, f.MemoryErr }

// SystemInfo returns System.
func (f *Fake) SystemInfo() corev1.NodeSystemInfo { return f.System }

// HugePageSizes returns HugePages.
func (f *Fake) HugePageSizes() []int64 { return f.HugePages }

// HugePageTotals returns HugePageTotal.
func (f *Fake) HugePageTotals() map[int64]int64 { return f.HugePageTotal }

// SELinux returns SELinuxEnabled.
func (f *Fake) SELinux() bool { return f.SELinuxEnabled }

// ThermalThrottlePaths returns Thermal.
func (f *Fake) ThermalThrottlePaths() []string { return f.Thermal }

// Procfs returns ProcRoot.
func (f *Fake) Procfs() string { return f.ProcRoot }

// Sysfs returns SysRoot.
func (f *Fake) Sysfs() string { return f.SysRoot }

// Sysctl answers from Sysctls; a missing name is an error, as a missing /proc/sys file is.
func (f *Fake) Sysctl(name string) (int, error) {
	v, ok := f.Sysctls[name]
	if !ok {
		return 0, fmt.Errorf("no such tunable %q", name)
	}
	return v, nil
}

// SetHeld makes path held (or free) as if by another process.
func (f *Fake) SetHeld(path string, held bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held[path] = held
}

// Lock fails with ErrLocked for held paths; otherwise it hands out a FakeLock the test can contend.
func (f *Fake) Lock(path string) (Lock, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held[path] {
		return nil, ErrLocked
	}
	l := &FakeLock{contended: make(chan struct{}), release: func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.held, path)
		delete(f.fakeLocks, path)
	}}
	f.fakeLocks[path] = l
	f.held[path] = true
	return l, nil
}

// Contend simulates another process opening the lock file at path; it reports whether a lock handed
// out by Lock is held there.
func (f *Fake) Contend(path string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	l, ok := f.fakeLocks[path]
	if ok {
		l.once.Do(func() { close(l.contended) })
	}
	return ok
}

// FakeLock is a lock handed out by Fake.
type FakeLock struct {
	contended chan struct{}
	once      sync.Once
	release   func()
}

// Contended is closed by Fake.Contend.
func (l *FakeLock) Contended() <-chan struct{} { return l.contended }

// Release frees the path for the next Lock.
func (l *FakeLock) Release() error { l.release(); return nil }
