package eviction

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// eventSize is an eventfd counter's size.
const eventSize = 8

// LinuxNotifierFactory arms thresholds with cgroup v1's memory controller: an eventfd registered
// in the cgroup's cgroup.event_control (Kubernetes' threshold_notifier_linux.go).
type LinuxNotifierFactory struct {
	Logger klog.Logger
}

// NewCgroupNotifier writes "<eventfd> <fd of path/attribute> <threshold>" to
// path/cgroup.event_control; the kernel then signals the eventfd each time the attribute crosses
// the threshold, either way.
func (f LinuxNotifierFactory) NewCgroupNotifier(path, attribute string, threshold int64) (CgroupNotifier, error) {
	n := &linuxCgroupNotifier{eventfd: -1, stopfd: -1, epfd: -1, log: f.Logger}
	watchfd, err := unix.Open(filepath.Join(path, attribute), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", filepath.Join(path, attribute), err)
	}
	defer unix.Close(watchfd)
	controlfd, err := unix.Open(filepath.Join(path, "cgroup.event_control"), unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", filepath.Join(path, "cgroup.event_control"), err)
	}
	defer unix.Close(controlfd)
	if n.eventfd, err = unix.Eventfd(0, unix.EFD_CLOEXEC); err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	if n.stopfd, err = unix.Eventfd(0, unix.EFD_CLOEXEC); err != nil {
		n.close()
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	if n.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		n.close()
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	for _, fd := range []int{n.eventfd, n.stopfd} {
		if err := unix.EpollCtl(n.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Fd: int32(fd), Events: unix.EPOLLIN}); err != nil {
			n.close()
			return nil, fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	if _, err := unix.Write(controlfd, []byte(fmt.Sprintf("%d %d %d", n.eventfd, watchfd, threshold))); err != nil {
		n.close()
		return nil, fmt.Errorf("registering a threshold of %d on %s in cgroup.event_control: %w", threshold, filepath.Join(path, attribute), err)
	}
	return n, nil
}

// linuxCgroupNotifier waits on epoll for the kernel's eventfd, or for Stop's on stopfd.
type linuxCgroupNotifier struct {
	eventfd, stopfd, epfd int
	log                   klog.Logger

	stopOnce sync.Once
	// done is closed when the watch has ended, so its descriptors can be closed.
	done chan struct{}
}

// Start watches in a goroutine of its own.
func (n *linuxCgroupNotifier) Start(eventCh chan<- struct{}) {
	n.done = make(chan struct{})
	go n.watch(eventCh)
}

func (n *linuxCgroupNotifier) watch(eventCh chan<- struct{}) {
	defer close(n.done)
	events := make([]unix.EpollEvent, 2)
	buf := make([]byte, eventSize)
	for {
		c, err := unix.EpollWait(n.epfd, events, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			n.log.Info("Eviction manager: error while waiting for memcg events", "err", err)
			return
		}
		if readable(events[:c], n.stopfd) {
			return
		}
		if !readable(events[:c], n.eventfd) {
			continue
		}
		if _, err := unix.Read(n.eventfd, buf); err != nil {
			n.log.Info("Eviction manager: error reading memcg events", "err", err)
			return
		}
		select {
		case eventCh <- struct{}{}:
		default: // a notification already waits: one round sees both
		}
	}
}

func readable(events []unix.EpollEvent, fd int) bool {
	for _, e := range events {
		if e.Fd == int32(fd) && e.Events&(unix.EPOLLIN|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
			return true
		}
	}
	return false
}

// Stop wakes the watch through stopfd and waits for it to end, then closes the descriptors;
// closing the eventfd unregisters the threshold.
func (n *linuxCgroupNotifier) Stop() {
	n.stopOnce.Do(func() {
		if n.done != nil {
			one := []byte{1, 0, 0, 0, 0, 0, 0, 0} // an eventfd adds a native-endian uint64
			if _, err := unix.Write(n.stopfd, one); err == nil {
				<-n.done
			}
		}
		n.close()
	})
}

func (n *linuxCgroupNotifier) close() {
	for _, fd := range []int{n.eventfd, n.stopfd, n.epfd} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	n.eventfd, n.stopfd, n.epfd = -1, -1, -1
}

// HostMemcg is --kernel-memcg-notification on this machine: cgroup v1's memory controller mounted
// under cgroupRoot (as /proc/mounts shows it) has threshold notifications; cgroup v2 and a host
// without the controller have none, which the string says. podsCgroup is the pods' cgroup.
func HostMemcg(cgroupRoot, mounts, podsCgroup string, factory NotifierFactory) (*MemcgNotifications, string) {
	data, err := os.ReadFile(mounts)
	if err != nil {
		return nil, fmt.Sprintf("reading %s: %v", mounts, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		// device mountpoint type options ...
		f := strings.Fields(sc.Text())
		if len(f) < 4 || (f[1] != cgroupRoot && !strings.HasPrefix(f[1], cgroupRoot+"/")) {
			continue
		}
		if f[2] == "cgroup2" && f[1] == cgroupRoot {
			return nil, "cgroup v2 has no memcg threshold notifications"
		}
		if f[2] == "cgroup" && hasOption(f[3], "memory") {
			return &MemcgNotifications{Factory: factory, MemoryRoot: f[1], PodsCgroup: podsCgroup}, ""
		}
	}
	return nil, fmt.Sprintf("no cgroup v1 memory controller is mounted under %s", cgroupRoot)
}

func hasOption(opts, name string) bool {
	for _, o := range strings.Split(opts, ",") {
		if o == name {
			return true
		}
	}
	return false
}
