package host

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
)

// Real reads the machine through procfs and sysfs mounted at ProcRoot and SysRoot, and its
// identity files under EtcRoot.
type Real struct {
	ProcRoot string
	SysRoot  string
	EtcRoot  string
}

// NewReal returns the host as seen through /proc, /sys and /etc.
func NewReal() *Real { return &Real{ProcRoot: "/proc", SysRoot: "/sys", EtcRoot: "/etc"} }

// SwapOn reads /proc/swaps: any line after the header is an active swap area.
func (r *Real) SwapOn() (bool, error) {
	data, err := os.ReadFile(filepath.Join(r.ProcRoot, "swaps"))
	if err != nil {
		return false, err
	}
	lines := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) != "" {
			lines++
		}
	}
	return lines > 1, sc.Err()
}

// CgroupVersion looks for cgroup.controllers at the cgroup root, which only the unified (v2) hierarchy
// has; a hybrid host, with v2 mounted elsewhere, counts as v1 as Kubernetes counts it.
func (r *Real) CgroupVersion() (int, error) {
	root := filepath.Join(r.SysRoot, "fs", "cgroup")
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return 2, nil
	}
	if _, err := os.Stat(root); err != nil {
		return 0, fmt.Errorf("no cgroup hierarchy: %w", err)
	}
	return 1, nil
}

// Sysctl reads /proc/sys/<name>.
func (r *Real) Sysctl(name string) (int, error) {
	if name == "" || strings.Contains(name, "..") {
		return 0, fmt.Errorf("invalid sysctl name %q", name)
	}
	data, err := os.ReadFile(filepath.Join(r.ProcRoot, "sys", name))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(data)))
}

// Hostname asks the kernel.
func (r *Real) Hostname() (string, error) { return os.Hostname() }

// Procfs is ProcRoot.
func (r *Real) Procfs() string { return r.ProcRoot }

// Sysfs is SysRoot.
func (r *Real) Sysfs() string { return r.SysRoot }

// Memory is MemTotal of meminfo.
func (r *Real) Memory() (int64, error) {
	path := filepath.Join(r.ProcRoot, "meminfo")
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("%s has no MemTotal", path)
}

// SystemInfo reads machine-id and os-release's PRETTY_NAME (the OS image, "Linux" without it)
// under EtcRoot, the DMI product UUID under SysRoot, the boot ID and kernel release under ProcRoot.
func (r *Real) SystemInfo() corev1.NodeSystemInfo {
	read := func(path string) string {
		data, err := os.ReadFile(path)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(data))
	}
	info := corev1.NodeSystemInfo{
		MachineID:     read(filepath.Join(r.EtcRoot, "machine-id")),
		SystemUUID:    read(filepath.Join(r.SysRoot, "class", "dmi", "id", "product_uuid")),
		BootID:        read(filepath.Join(r.ProcRoot, "sys", "kernel", "random", "boot_id")),
		KernelVersion: read(filepath.Join(r.ProcRoot, "sys", "kernel", "osrelease")),
		OSImage:       "Linux",
	}
	for _, line := range strings.Split(read(filepath.Join(r.EtcRoot, "os-release")), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			info.OSImage = strings.Trim(v, `"`)
		}
	}
	return info
}

// HugePageSizes reads the hugepages-<size>kB directories of kernel/mm/hugepages; none when it
// cannot be read.
func (r *Real) HugePageSizes() []int64 {
	entries, err := os.ReadDir(filepath.Join(r.SysRoot, "kernel", "mm", "hugepages"))
	if err != nil {
		return nil
	}
	var out []int64
	for _, e := range entries {
		kb, ok := strings.CutPrefix(e.Name(), "hugepages-")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(kb, "kB"), 10, 64)
		if err != nil {
			continue
		}
		out = append(out, n*1024)
	}
	return out
}

// HugePageTotals reads nr_hugepages of each hugepages-<size>kB directory of kernel/mm/hugepages.
func (r *Real) HugePageTotals() map[int64]int64 {
	out := map[int64]int64{}
	for _, size := range r.HugePageSizes() {
		data, err := os.ReadFile(filepath.Join(r.SysRoot, "kernel", "mm", "hugepages", fmt.Sprintf("hugepages-%dkB", size/1024), "nr_hugepages"))
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil {
			out[size] = n
		}
	}
	return out
}

// SELinux looks for fs/selinux/enforce, which only a kernel with SELinux enabled has.
func (r *Real) SELinux() bool {
	_, err := os.Stat(filepath.Join(r.SysRoot, "fs", "selinux", "enforce"))
	return err == nil
}

// ThermalThrottlePaths reads devices/system/cpu/possible (ranges such as "0-3,5") and keeps the
// CPUs whose thermal_throttle directory exists (pkg/securitycontext, after moby).
func (r *Real) ThermalThrottlePaths() []string {
	data, err := os.ReadFile(filepath.Join(r.SysRoot, "devices", "system", "cpu", "possible"))
	if err != nil {
		return nil
	}
	var out []string
	for _, rng := range strings.Split(strings.TrimSpace(string(data)), ",") {
		first, last, ranged := strings.Cut(rng, "-")
		if !ranged {
			last = first
		}
		lo, err1 := strconv.Atoi(first)
		hi, err2 := strconv.Atoi(last)
		if err1 != nil || err2 != nil {
			return nil
		}
		for cpu := lo; cpu <= hi; cpu++ {
			p := fmt.Sprintf("/sys/devices/system/cpu/cpu%d/thermal_throttle", cpu)
			if _, err := os.Stat(filepath.Join(r.SysRoot, strings.TrimPrefix(p, "/sys/"))); err == nil {
				out = append(out, p)
			}
		}
	}
	return out
}

// Lock takes an exclusive flock on path, creating the file, and watches it with inotify so a later
// opener is seen as contention.
func (r *Real) Lock(path string) (Lock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, ErrLocked
		}
		return nil, err
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		f.Close()
		return nil, err
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_OPEN); err != nil {
		unix.Close(fd)
		f.Close()
		return nil, err
	}
	l := &realLock{file: f, watch: os.NewFile(uintptr(fd), "inotify"), contended: make(chan struct{})}
	go l.wait()
	return l, nil
}

type realLock struct {
	file      *os.File
	watch     *os.File
	contended chan struct{}
	once      sync.Once
}

// wait blocks until the watched file is opened or the watch is closed by Release.
func (l *realLock) wait() {
	buf := make([]byte, unix.SizeofInotifyEvent+unix.NAME_MAX+1)
	if n, err := l.watch.Read(buf); err == nil && n > 0 {
		close(l.contended)
	}
}

func (l *realLock) Contended() <-chan struct{} { return l.contended }

func (l *realLock) Release() error {
	var err error
	l.once.Do(func() { err = errors.Join(l.watch.Close(), l.file.Close()) })
	return err
}
