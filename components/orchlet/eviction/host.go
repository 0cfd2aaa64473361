package eviction

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// HostNode reads the node itself: memory from the root memory cgroup at CgroupRoot (cgroup v2, or
// v1's memory controller under it) and from ProcRoot/meminfo, filesystems with statfs, processes
// from ProcRoot.
type HostNode struct {
	// CgroupRoot is where cgroups are mounted (/sys/fs/cgroup); ProcRoot is /proc.
	CgroupRoot, ProcRoot string
}

// Memory is MemTotal, the root memory cgroup's usage (cgroup v2's memory.current, v1's
// memory/memory.usage_in_bytes, or MemTotal - MemFree without either), and the working set as
// Kubernetes computes it: usage less inactive file pages (memory.stat's inactive_file, v1's
// total_inactive_file, or Inactive(file) of meminfo).
func (h HostNode) Memory() (capacity, usage, workingSet uint64, err error) {
	info, err := readKV(filepath.Join(h.ProcRoot, "meminfo"), 1024)
	if err != nil {
		return 0, 0, 0, err
	}
	capacity, ok := info["MemTotal"]
	if !ok {
		return 0, 0, 0, fmt.Errorf("%s has no MemTotal", filepath.Join(h.ProcRoot, "meminfo"))
	}
	usage = sub(capacity, info["MemFree"])
	inactive := info["Inactive(file)"]
	for _, cg := range []struct{ usage, stat, inactive string }{
		{"memory.current", "memory.stat", "inactive_file"},
		{"memory/memory.usage_in_bytes", "memory/memory.stat", "total_inactive_file"},
	} {
		path := filepath.Join(h.CgroupRoot, cg.usage)
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		if usage, err = strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64); err != nil {
			return 0, 0, 0, fmt.Errorf("%s: %w", path, err)
		}
		if stat, err := readKV(filepath.Join(h.CgroupRoot, cg.stat), 1); err == nil {
			if v, ok := stat[cg.inactive]; ok {
				inactive = v
			}
		}
		break
	}
	return capacity, usage, sub(usage, inactive), nil
}

// readKV reads "key value [kB]" lines, each value times unit.
func readKV(path string, unit uint64) (map[string]uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		v, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, sc.Text(), err)
		}
		out[strings.TrimSuffix(f[0], ":")] = v * unit
	}
	return out, nil
}

// Statfs is statfs(2) of path: bytes available to unprivileged users, as df shows them.
func (h HostNode) Statfs(path string) (FsStats, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return FsStats{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	bs := uint64(st.Bsize)
	return FsStats{AvailableBytes: st.Bavail * bs, CapacityBytes: st.Blocks * bs, InodesFree: st.Ffree, Inodes: st.Files}, nil
}

// Pids is kernel/pid_max, and the scheduling entities of loadavg's fourth field (running/total).
func (h HostNode) Pids() (max, running uint64, err error) {
	path := filepath.Join(h.ProcRoot, "sys", "kernel", "pid_max")
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	if max, err = strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	path = filepath.Join(h.ProcRoot, "loadavg")
	data, err = os.ReadFile(path)
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(data))
	if len(f) < 4 || !strings.Contains(f[3], "/") {
		return 0, 0, fmt.Errorf("%s: %q has no running/total field", path, strings.TrimSpace(string(data)))
	}
	if running, err = strconv.ParseUint(f[3][strings.Index(f[3], "/")+1:], 10, 64); err != nil {
		return 0, 0, fmt.Errorf("%s: %w", path, err)
	}
	return max, running, nil
}
