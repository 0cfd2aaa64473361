package cm

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// ApplyOOMScoreAdj writes v to the process's oom_score_adj under procfs, as the kubelet's OOM
// adjuster does (tried twice).
func ApplyOOMScoreAdj(procfs string, pid int, v int32) error {
	path := filepath.Join(procfs, strconv.Itoa(pid), "oom_score_adj")
	var err error
	for range 2 {
		if err = os.WriteFile(path, []byte(strconv.Itoa(int(v))), 0o700); err == nil || errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("failed to apply oom score %d to PID %d: %w", v, pid, err)
	}
	return nil
}

// SetOpenFiles is the kubelet's rlimit.SetNumFiles: this process's soft and hard RLIMIT_NOFILE.
func SetOpenFiles(n uint64) error {
	return unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: n, Max: n})
}

// inHostPIDNamespace is isProcessRunningInHost: the process shares init's pid namespace. A
// process in a container's is left where it is, its OOM score included.
func inHostPIDNamespace(procfs string, pid int) (bool, error) {
	initNS, err := os.Readlink(filepath.Join(procfs, "1", "ns", "pid"))
	if err != nil {
		return false, fmt.Errorf("failed to find pid namespace of init process: %w", err)
	}
	ns, err := os.Readlink(filepath.Join(procfs, strconv.Itoa(pid), "ns", "pid"))
	if err != nil {
		return false, fmt.Errorf("failed to find pid namespace of process %d: %w", pid, err)
	}
	return ns == initNS, nil
}

// kernelThread is isKernelPid: a kernel thread has no executable.
func kernelThread(procfs string, pid int) bool {
	_, err := os.Readlink(filepath.Join(procfs, strconv.Itoa(pid), "exe"))
	return errors.Is(err, fs.ErrNotExist)
}

// SystemContainers are the cgroups the kubelet keeps processes in, checked every minute:
// --kubelet-cgroups for the agent (with its OOM score adjustment), --system-cgroups for every
// process the root cgroup holds but init and the kernel's threads.
type SystemContainers struct {
	Cgroups Hierarchy
	Procfs  string
	// Pid is the agent's process.
	Pid         int
	OOMScoreAdj int32
	// Orchlet and System are --kubelet-cgroups and --system-cgroups, cgroupfs paths; "" for none.
	Orchlet, System string
}

// EnsureOrchlet is ensureProcessInContainerWithOOMScore: the agent in its cgroup when one is
// named, and its OOM score adjustment applied again, unless it runs in a container's pid
// namespace.
func (s SystemContainers) EnsureOrchlet() error {
	host, err := inHostPIDNamespace(s.Procfs, s.Pid)
	if err != nil || !host {
		return err
	}
	var errs []error
	if s.Orchlet != "" {
		if err := s.Cgroups.Join(s.Orchlet, s.Pid); err != nil {
			errs = append(errs, fmt.Errorf("failed to move PID %d to %q: %w", s.Pid, s.Orchlet, err))
		}
	}
	if err := ApplyOOMScoreAdj(s.Procfs, s.Pid, s.OOMScoreAdj); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// EnsureSystem is ensureSystemCgroups: the root cgroup's processes but init and the kernel's
// threads moved into --system-cgroups, the list read again until it is empty, at most 11 times.
func (s SystemContainers) EnsureSystem() error {
	var last error
	for range 11 {
		all, err := s.Cgroups.Pids("/")
		if err != nil {
			last = fmt.Errorf("failed to list PIDs for root: %w", err)
			continue
		}
		var pids []int
		for _, pid := range all {
			if pid != 1 && !kernelThread(s.Procfs, pid) {
				pids = append(pids, pid)
			}
		}
		if len(pids) == 0 {
			return nil
		}
		for _, pid := range pids {
			if err := s.Cgroups.Join(s.System, pid); err != nil {
				last = fmt.Errorf("failed to move PID %d into the system container %q: %w", pid, s.System, err)
			}
		}
	}
	return last
}
