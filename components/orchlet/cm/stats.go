package cm

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The names of the stats summary's system containers (stats/v1alpha1's SystemContainer*).
const (
	SystemContainerOrchlet = "kubelet"
	SystemContainerRuntime = "runtime"
	SystemContainerMisc    = "misc"
	SystemContainerPods    = "pods"
)

// unlimited is where a memory limit stops counting as one (cadvisor's isMemoryUnlimited: v1
// writes "no limit" as the page-rounded maximum).
const unlimited = uint64(1) << 62

// CgroupStats are one cgroup's CPU and memory as cadvisor reads them for the stats summary.
type CgroupStats struct {
	// Created is the cgroup's creation time: its directories' earliest modification, as cadvisor
	// takes it.
	Created time.Time
	// CPUUsage is the CPU time used, in nanoseconds.
	CPUUsage uint64
	// MemoryUsage and WorkingSet (usage less inactive file pages) are in bytes, as are RSS (anon
	// memory) and MemoryLimit (0 when unlimited).
	MemoryUsage, WorkingSet, RSS, MemoryLimit uint64
	PageFaults, MajorPageFaults               uint64
}

// Stats reads the cgroup's CPU and memory: v2's cpu.stat, memory.current, memory.max and
// memory.stat (anon, inactive_file, pgfault, pgmajfault); v1's cpuacct.usage,
// memory.usage_in_bytes, memory.limit_in_bytes and memory.stat's hierarchical total_ fields.
func (h Hierarchy) Stats(name string) (CgroupStats, error) {
	var s CgroupStats
	dirs := []string{h.dir("", name)}
	if !h.V2 {
		dirs = []string{h.dir("cpuacct", name), h.dir("memory", name)}
	}
	for _, d := range dirs {
		fi, err := os.Stat(d)
		if err != nil {
			return CgroupStats{}, fmt.Errorf("cgroup %s: %w", name, err)
		}
		if s.Created.IsZero() || fi.ModTime().Before(s.Created) {
			s.Created = fi.ModTime()
		}
	}
	stat := func(subsystem, file string) (map[string]uint64, error) {
		if h.V2 {
			subsystem = ""
		}
		return readFlatKeyed(filepath.Join(h.dir(subsystem, name), file))
	}
	number := func(subsystem, file string) (uint64, error) {
		v, err := h.File(subsystem, name, file)
		if err != nil {
			return 0, err
		}
		if v == "max" {
			return 0, nil
		}
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cgroup %s: %s %q: %w", name, file, v, err)
		}
		return n, nil
	}
	var err error
	prefix := ""
	if h.V2 {
		cpu, err := stat("", "cpu.stat")
		if err != nil {
			return CgroupStats{}, err
		}
		s.CPUUsage = cpu["usage_usec"] * 1000
		if s.MemoryUsage, err = number("", "memory.current"); err != nil {
			return CgroupStats{}, err
		}
		if s.MemoryLimit, err = number("", "memory.max"); err != nil {
			return CgroupStats{}, err
		}
	} else {
		prefix = "total_"
		if s.CPUUsage, err = number("cpuacct", "cpuacct.usage"); err != nil {
			return CgroupStats{}, err
		}
		if s.MemoryUsage, err = number("memory", "memory.usage_in_bytes"); err != nil {
			return CgroupStats{}, err
		}
		if s.MemoryLimit, err = number("memory", "memory.limit_in_bytes"); err != nil {
			return CgroupStats{}, err
		}
	}
	if s.MemoryLimit > unlimited {
		s.MemoryLimit = 0
	}
	mem, err := stat("memory", "memory.stat")
	if err != nil {
		return CgroupStats{}, err
	}
	rss := "rss"
	if h.V2 {
		rss = "anon"
	}
	s.RSS, s.PageFaults, s.MajorPageFaults = mem[prefix+rss], mem[prefix+"pgfault"], mem[prefix+"pgmajfault"]
	s.WorkingSet = s.MemoryUsage - min(s.MemoryUsage, mem[prefix+"inactive_file"])
	return s, nil
}

// readFlatKeyed reads a cgroup's "key value" lines.
func readFlatKeyed(path string) (map[string]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %q: %w", path, sc.Text(), err)
		}
		out[k] = n
	}
	return out, sc.Err()
}

// ProcessCgroup is the cgroup a process's CPU and memory are accounted in, as the kubelet's
// getContainer reads /proc/<pid>/cgroup: v2's unified path; on v1 the cpu controller's, which
// must be the memory controller's too.
func ProcessCgroup(procfs string, pid int, v2 bool) (string, error) {
	path := filepath.Join(procfs, strconv.Itoa(pid), "cgroup")
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	paths := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return "", fmt.Errorf("%s: %q is not hierarchy:controllers:path", path, line)
		}
		for _, c := range strings.Split(parts[1], ",") {
			paths[c] = parts[2]
		}
	}
	if v2 {
		if p, ok := paths[""]; ok {
			return p, nil
		}
		return "", fmt.Errorf("%s: no unified cgroup", path)
	}
	cpu, okCPU := paths["cpu"]
	memory, okMemory := paths["memory"]
	switch {
	case !okCPU || !okMemory:
		return "", fmt.Errorf("%s: no cpu or memory cgroup", path)
	case cpu != memory:
		return "", fmt.Errorf("cpu and memory cgroup hierarchy not unified.  cpu: %s, memory: %s", cpu, memory)
	}
	return cpu, nil
}

// SystemContainer is one of the stats summary's system containers, read at Time.
type SystemContainer struct {
	// Name is kubelet, runtime, misc or pods; Cgroup the cgroup read.
	Name, Cgroup string
	Time         time.Time
	// StartTime is the agent's start for kubelet, else the cgroup's creation.
	StartTime time.Time
	CgroupStats
	// UsageNanoCores is the CPU used per second since the previous reading of the cgroup; 0 at the
	// first, as the kubelet reports it before cadvisor has two samples.
	UsageNanoCores uint64
}

// cpuSample is a cgroup's CPU time when last read.
type cpuSample struct {
	at    time.Time
	usage uint64
}

// SystemContainers reads the stats summary's system containers as the kubelet's summary provider
// does: the agent's cgroup (--kubelet-cgroups, or the one it runs in), --runtime-cgroups,
// --system-cgroups as misc, and the pods' cgroup (orchpods, or --cgroup-root without
// --cgroups-per-qos), each named one; a cgroup that cannot be read is logged and left out. A
// simulated machine has none.
func (m *Manager) SystemContainers() []SystemContainer {
	if m.o.Cgroups == nil {
		return nil
	}
	c := m.o.Config
	orchlet := c.KubeletCgroups
	if orchlet == "" {
		var err error
		if orchlet, err = ProcessCgroup(m.o.Procfs, m.o.Pid, m.o.Cgroups.V2); err != nil {
			m.o.Logger.Error(err, "Failed to find cgroups of the orchlet")
		}
	}
	pods := c.CgroupRoot
	if c.CgroupsPerQOS {
		pods = m.podsCgroup
	}
	now := m.o.Clock.Now()
	var out []SystemContainer
	for _, s := range []struct{ name, cgroup string }{
		{SystemContainerOrchlet, orchlet},
		{SystemContainerRuntime, m.o.RuntimeCgroups},
		{SystemContainerMisc, c.SystemCgroups},
		{SystemContainerPods, pods},
	} {
		if s.cgroup == "" {
			continue
		}
		st, err := m.o.Cgroups.Stats(s.cgroup)
		if err != nil {
			m.o.Logger.Error(err, "Failed to get system container stats", "containerName", s.cgroup)
			continue
		}
		sc := SystemContainer{Name: s.name, Cgroup: s.cgroup, Time: now, StartTime: st.Created, CgroupStats: st}
		if s.name == SystemContainerOrchlet {
			sc.StartTime = m.o.Started
		}
		m.mu.Lock()
		if prev, ok := m.cpu[s.cgroup]; ok && now.After(prev.at) && st.CPUUsage >= prev.usage {
			sc.UsageNanoCores = uint64(float64(st.CPUUsage-prev.usage) / now.Sub(prev.at).Seconds())
		}
		m.cpu[s.cgroup] = cpuSample{at: now, usage: st.CPUUsage}
		m.mu.Unlock()
		out = append(out, sc)
	}
	return out
}
