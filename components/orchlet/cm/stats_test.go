package cm

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

// cgroupFiles writes a cgroup's CPU and memory files as the kernel shows them: v1's in the
// cpuacct and memory subsystems (memory.stat's hierarchical total_ lines beside the local ones),
// v2's in the unified directory.
func cgroupFiles(t *testing.T, h Hierarchy, name string, cpuNanos, usage, limit uint64) {
	t.Helper()
	u := strconv.FormatUint
	if h.V2 {
		dir := filepath.Join(h.Root, name)
		mustMkdir(t, dir)
		write(t, filepath.Join(dir, "cpu.stat"), "usage_usec "+u(cpuNanos/1000, 10)+"\nuser_usec 1\nsystem_usec 1\n")
		write(t, filepath.Join(dir, "memory.current"), u(usage, 10)+"\n")
		max := "max"
		if limit != 0 {
			max = u(limit, 10)
		}
		write(t, filepath.Join(dir, "memory.max"), max+"\n")
		write(t, filepath.Join(dir, "memory.stat"), "anon 3000\nfile 5000\ninactive_file 1000\npgfault 70\npgmajfault 2\n")
		return
	}
	mustMkdir(t, filepath.Join(h.Root, "cpuacct", name))
	mustMkdir(t, filepath.Join(h.Root, "memory", name))
	write(t, filepath.Join(h.Root, "cpuacct", name, "cpuacct.usage"), u(cpuNanos, 10)+"\n")
	write(t, filepath.Join(h.Root, "memory", name, "memory.usage_in_bytes"), u(usage, 10)+"\n")
	if limit == 0 {
		limit = 9223372036854771712 // v1's "no limit"
	}
	write(t, filepath.Join(h.Root, "memory", name, "memory.limit_in_bytes"), u(limit, 10)+"\n")
	write(t, filepath.Join(h.Root, "memory", name, "memory.stat"), "rss 1\ninactive_file 1\npgfault 1\npgmajfault 1\ntotal_rss 3000\ntotal_inactive_file 1000\ntotal_pgfault 70\ntotal_pgmajfault 2\n")
}

// The stats summary's system containers, as the kubelet's summary provider reports them, read from
// the cgroups on v1 and v2: the agent's (its own cgroup from /proc/<pid>/cgroup without
// --kubelet-cgroups, its start as start time), --runtime-cgroups as runtime, --system-cgroups as
// misc, and orchpods as pods; CPU time and its rate since the previous reading, memory usage,
// working set (less inactive file pages), anon memory as RSS, page faults and the limit. A
// cgroup that cannot be read is left out.
func TestSystemContainerStats(t *testing.T) {
	for _, v2 := range []bool{false, true} {
		h := v1Tree(t)
		procLine := "12:cpu,cpuacct:/user.slice\n11:memory:/user.slice\n1:name=systemd:/user.slice/session-1.scope\n"
		if v2 {
			h = v2Tree(t)
			procLine = "0::/user.slice/session-1.scope\n"
		}
		hr := newHarness(t, h, func(c *v1beta1.OrchletConfiguration) { c.SystemCgroups = "/system.slice" })
		started := hr.clk.Now().Add(-time.Hour)
		hr.m.o.RuntimeCgroups, hr.m.o.Started = "/system.slice/containerd.service", started
		write(t, filepath.Join(hr.proc, strconv.Itoa(agentPid), "cgroup"), procLine)
		orchlet := "/user.slice"
		if v2 {
			orchlet = "/user.slice/session-1.scope"
		}
		cgroupFiles(t, h, orchlet, 5e9, 40000, 0)
		cgroupFiles(t, h, "/system.slice/containerd.service", 2e9, 20000, 100000)
		cgroupFiles(t, h, "/orchpods", 9e9, 90000, 0)
		// misc (/system.slice) has no files: left out.

		got := hr.m.SystemContainers()
		var names []string
		for _, c := range got {
			names = append(names, c.Name+"="+c.Cgroup)
		}
		want := "kubelet=" + orchlet + " runtime=/system.slice/containerd.service pods=/orchpods"
		if strings.Join(names, " ") != want {
			t.Fatalf("v2=%v: system containers %v, want %s", v2, names, want)
		}
		rt := got[1]
		if rt.CPUUsage != 2e9 || rt.MemoryUsage != 20000 || rt.WorkingSet != 19000 || rt.RSS != 3000 || rt.PageFaults != 70 || rt.MajorPageFaults != 2 ||
			rt.MemoryLimit != 100000 || rt.UsageNanoCores != 0 || !rt.Time.Equal(hr.clk.Now()) {
			t.Errorf("v2=%v: runtime %+v", v2, rt)
		}
		if got[0].MemoryLimit != 0 || !got[0].StartTime.Equal(started) || got[2].StartTime.IsZero() {
			t.Errorf("v2=%v: kubelet %+v, pods %+v", v2, got[0], got[2])
		}

		// Ten seconds and half a CPU-second later: 50,000,000 nanocores.
		hr.clk.Add(10 * time.Second)
		cgroupFiles(t, h, "/system.slice/containerd.service", 2e9+5e8, 20000, 100000)
		again := hr.m.SystemContainers()
		if again[1].UsageNanoCores != 5e7 {
			t.Errorf("v2=%v: runtime's rate %d nanocores, want 50000000", v2, again[1].UsageNanoCores)
		}
	}
}

// Without --cgroups-per-qos the pods' system container is --cgroup-root; with --kubelet-cgroups
// the agent's is that cgroup, /proc not read; on v1 the agent's cpu and memory cgroups must be one.
func TestSystemContainerNames(t *testing.T) {
	h := v1Tree(t)
	hr := newHarness(t, h, func(c *v1beta1.OrchletConfiguration) {
		c.CgroupsPerQOS, c.CgroupRoot, c.KubeletCgroups = false, "/", "/orchlet.service"
	})
	cgroupFiles(t, h, "/orchlet.service", 1, 1, 0)
	cgroupFiles(t, h, "/", 1, 1, 0)
	var names []string
	for _, c := range hr.m.SystemContainers() {
		names = append(names, c.Name+"="+c.Cgroup)
	}
	if strings.Join(names, " ") != "kubelet=/orchlet.service pods=/" {
		t.Errorf("system containers %v", names)
	}
	proc := t.TempDir()
	mustMkdir(t, filepath.Join(proc, "9"))
	write(t, filepath.Join(proc, "9", "cgroup"), "4:cpu:/a\n3:memory:/b\n")
	if _, err := ProcessCgroup(proc, 9, false); err == nil || !strings.Contains(err.Error(), "cpu and memory cgroup hierarchy not unified") {
		t.Errorf("split cpu and memory cgroups: %v", err)
	}
	if _, err := ProcessCgroup(proc, 9, true); err == nil {
		t.Error("no unified line on v2 was accepted")
	}
}
