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
)

// Real reads the machine through procfs and sysfs mounted at ProcRoot and SysRoot.
type Real struct {
	ProcRoot string
	SysRoot  string
}

// NewReal returns the host as seen through /proc and /sys.
func NewReal() *Real { return &Real{ProcRoot: "/proc", SysRoot: "/sys"} }

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
