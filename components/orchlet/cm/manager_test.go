package cm

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/events/eventstest"
)

const agentPid = 4242

// v1Tree is a cgroup v1 hierarchy as a host mounts it, in a directory: one per subsystem, the
// root cpuset's CPUs and memory nodes, and the cgroups named made in every subsystem.
func v1Tree(t *testing.T, cgroups ...string) Hierarchy {
	root := t.TempDir()
	for _, s := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "devices", "hugetlb"} {
		for _, cg := range append([]string{"/"}, cgroups...) {
			mustMkdir(t, filepath.Join(root, s, cg))
		}
	}
	write(t, filepath.Join(root, "cpuset", "cpuset.cpus"), "0-3")
	write(t, filepath.Join(root, "cpuset", "cpuset.mems"), "0")
	return Hierarchy{Root: root}
}

// v2Tree is a unified hierarchy offering the controllers, with the cgroups named delegated them.
func v2Tree(t *testing.T, cgroups ...string) Hierarchy {
	root := t.TempDir()
	write(t, filepath.Join(root, "cgroup.controllers"), "cpuset cpu io memory hugetlb pids")
	for _, cg := range cgroups {
		mustMkdir(t, filepath.Join(root, cg))
		write(t, filepath.Join(root, cg, "cgroup.controllers"), "cpuset cpu memory hugetlb pids")
	}
	return Hierarchy{Root: root, V2: true}
}

// procfs is a procfs with init, the agent, a user process (7) and a kernel thread (2), all in
// the host's pid namespace.
func procfs(t *testing.T) string {
	dir := t.TempDir()
	for _, pid := range []int{1, agentPid, 7, 2} {
		p := filepath.Join(dir, strconv.Itoa(pid))
		mustMkdir(t, filepath.Join(p, "ns"))
		if err := os.Symlink("pid:[4026531836]", filepath.Join(p, "ns", "pid")); err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(p, "oom_score_adj"), "0")
		if pid != 2 {
			if err := os.Symlink("/bin/sh", filepath.Join(p, "exe")); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

type harness struct {
	m         *Manager
	clk       *clock.Mock
	rec       *eventstest.Recorder
	proc      string
	openFiles []uint64
}

func newHarness(t *testing.T, h Hierarchy, mod func(*v1beta1.OrchletConfiguration)) *harness {
	t.Helper()
	c := config(mod)
	res, err := NodeResources(c, false, Machine{Cores: 4, Memory: 8 * gib, PidMax: 32768})
	if err != nil {
		t.Fatal(err)
	}
	hr := &harness{clk: clock.NewMock(), rec: &eventstest.Recorder{}, proc: procfs(t)}
	hr.m, err = New(Options{
		Clock: hr.clk, Logger: klog.Background(), Node: "node-a", Recorder: hr.rec, Config: c, Resources: res,
		Cgroups: &h, Procfs: hr.proc, Pid: agentPid, HugePageSizes: []int64{2 << 20},
		SetOpenFiles: func(n uint64) error { hr.openFiles = append(hr.openFiles, n); return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	return hr
}

// The kubelet's start: its OOM score and open-files limit, the pods' cgroup sized to capacity
// less the reservations, and each reserved cgroup limited to its reservation (cpu shares only
// for a -compressible level), with the node allocatable events.
func TestStartEnforcesNodeAllocatableOnCgroupV1(t *testing.T) {
	h := v1Tree(t, "orch-reserved", "system.slice")
	hr := newHarness(t, h, func(c *v1beta1.OrchletConfiguration) {
		c.KubeReserved = map[string]string{"cpu": "500m", "memory": "1Gi", "pid": "100"}
		c.SystemReserved = map[string]string{"cpu": "1", "memory": "512Mi"}
		c.KubeReservedCgroup, c.SystemReservedCgroup = "/orch-reserved", "/system.slice"
		c.EnforceNodeAllocatable = []string{"pods", "orch-reserved", "system-reserved-compressible"}
	})
	if err := hr.m.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ path, want string }{
		{"memory/orchpods/memory.limit_in_bytes", strconv.FormatInt(8*gib-gib-512<<20, 10)},
		{"cpu/orchpods/cpu.shares", "2560"},
		{"pids/orchpods/pids.max", "32668"},
		{"hugetlb/orchpods/hugetlb.2MB.limit_in_bytes", "0"},
		{"memory/orch-reserved/memory.limit_in_bytes", strconv.FormatInt(gib, 10)},
		{"cpu/orch-reserved/cpu.shares", "512"},
		{"pids/orch-reserved/pids.max", "100"},
		{"cpu/system.slice/cpu.shares", "1024"},
		{"../proc/4242/oom_score_adj", "-999"},
	} {
		path := filepath.Join(h.Root, f.path)
		if strings.HasPrefix(f.path, "../proc/") {
			path = filepath.Join(hr.proc, strings.TrimPrefix(f.path, "../proc/"))
		}
		if got := read(t, path); got != f.want {
			t.Errorf("%s = %s, want %s", f.path, got, f.want)
		}
	}
	if _, err := os.Stat(filepath.Join(h.Root, "memory", "system.slice", "memory.limit_in_bytes")); err == nil {
		t.Error("a compressible level wrote a memory limit")
	}
	if !slices.Equal(hr.openFiles, []uint64{1000000}) {
		t.Errorf("open files set to %v, want [1000000]", hr.openFiles)
	}
	want := []string{
		"Normal NodeAllocatableEnforced Node/node-a: Updated Node Allocatable limit across pods",
		"Normal NodeAllocatableEnforced Node/node-a: Updated limits on kube reserved cgroup /orch-reserved",
		"Normal NodeAllocatableEnforced Node/node-a: Updated limits on system reserved cgroup /system.slice",
	}
	if got := hr.rec.Events(); !slices.Equal(got, want) {
		t.Errorf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The kubelet does not make a reserved cgroup: one missing stops the start, naming it.
func TestStartRefusesAMissingReservedCgroup(t *testing.T) {
	hr := newHarness(t, v1Tree(t), func(c *v1beta1.OrchletConfiguration) {
		c.SystemReserved = map[string]string{"memory": "512Mi"}
		c.SystemReservedCgroup = "/system.slice"
		c.EnforceNodeAllocatable = []string{"pods", "system-reserved"}
	})
	err := hr.m.Start()
	if err == nil || !strings.Contains(err.Error(), `--enforce-node-allocatable (enforceNodeAllocatable) system-reserved: Failed to enforce System Reserved Cgroup Limits on "/system.slice": cgroup "/system.slice" has some missing paths`) {
		t.Fatalf("Start = %v", err)
	}
	if got := hr.rec.Events(); len(got) != 2 || !strings.HasPrefix(got[1], "Warning FailedNodeAllocatableEnforcement Node/node-a: Failed to enforce System Reserved Cgroup Limits") {
		t.Errorf("events %q", got)
	}
}

// On cgroup v2 with the systemd driver: the slices' names, memory.max, cpu.weight, pids.max.
func TestStartEnforcesNodeAllocatableOnCgroupV2Systemd(t *testing.T) {
	h := v2Tree(t, "orch.slice/orch-reserved.slice")
	hr := newHarness(t, h, func(c *v1beta1.OrchletConfiguration) {
		c.CgroupDriver = "systemd"
		c.KubeReserved = map[string]string{"cpu": "1", "memory": "1Gi"}
		c.KubeReservedCgroup = "/orch.slice/orch-reserved.slice"
		c.EnforceNodeAllocatable = []string{"pods", "kube-reserved"}
	})
	if err := hr.m.Start(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ path, want string }{
		{"orchpods.slice/memory.max", strconv.FormatInt(7*gib, 10)},
		{"orchpods.slice/cpu.weight", "118"},
		{"orchpods.slice/pids.max", "32768"},
		{"orchpods.slice/hugetlb.2MB.max", "0"},
		{"orch.slice/orch-reserved.slice/memory.max", strconv.FormatInt(gib, 10)},
		{"orch.slice/orch-reserved.slice/cpu.weight", "39"},
	} {
		if got := read(t, filepath.Join(h.Root, f.path)); got != f.want {
			t.Errorf("%s = %s, want %s", f.path, got, f.want)
		}
	}
}

// A v2 cgroup without the controllers the root offers is refused as the kubelet's Validate does.
func TestValidateOnCgroupV2(t *testing.T) {
	h := v2Tree(t, "ok.slice")
	mustMkdir(t, filepath.Join(h.Root, "bare"))
	write(t, filepath.Join(h.Root, "bare", "cgroup.controllers"), "cpu")
	if err := h.Validate("/ok.slice"); err != nil {
		t.Errorf("Validate(ok) = %v", err)
	}
	if err := h.Validate("/bare"); err == nil || !strings.Contains(err.Error(), `cgroup "/bare" has some missing controllers: cpuset, memory, pids, hugetlb`) {
		t.Errorf("Validate(bare) = %v", err)
	}
	if err := h.Validate("/absent"); err == nil {
		t.Error("Validate(absent) = nil")
	}
}

// --kubelet-cgroups takes the agent (a new v1 cpuset cgroup given its parent's CPUs first),
// --system-cgroups the root cgroup's processes but init and the kernel's threads; the OOM score
// is applied again every 5 minutes when the agent has no cgroup of its own.
func TestSystemContainers(t *testing.T) {
	h := v1Tree(t)
	write(t, filepath.Join(h.Root, "devices", "cgroup.procs"), "1\n2\n7\n")
	hr := newHarness(t, h, func(c *v1beta1.OrchletConfiguration) {
		c.KubeletCgroups, c.SystemCgroups = "/orchlet.service", "/system"
	})
	if err := hr.m.Start(); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"cpu", "memory", "cpuset", "pids"} {
		if got := read(t, filepath.Join(h.Root, s, "orchlet.service", "cgroup.procs")); got != strconv.Itoa(agentPid) {
			t.Errorf("%s/orchlet.service has %q, want the agent", s, got)
		}
		if got := read(t, filepath.Join(h.Root, s, "system", "cgroup.procs")); got != "7" {
			t.Errorf("%s/system has %q, want the user process only", s, got)
		}
	}
	if got := read(t, filepath.Join(h.Root, "cpuset", "orchlet.service", "cpuset.cpus")); got != "0-3" {
		t.Errorf("the agent's cpuset has CPUs %q, want its parent's", got)
	}

	noCgroup := newHarness(t, v1Tree(t), nil)
	if err := noCgroup.m.Start(); err != nil {
		t.Fatal(err)
	}
	oom := filepath.Join(noCgroup.proc, strconv.Itoa(agentPid), "oom_score_adj")
	write(t, oom, "0")
	noCgroup.clk.Add(4 * time.Minute)
	noCgroup.m.Step(noCgroup.clk.Now())
	if got := read(t, oom); got != "0" {
		t.Fatalf("OOM score applied again after 4 minutes: %s", got)
	}
	noCgroup.clk.Add(time.Minute)
	if d := noCgroup.m.NextDeadline(); d.After(noCgroup.clk.Now()) {
		t.Fatalf("next deadline %v after now %v", d, noCgroup.clk.Now())
	}
	noCgroup.m.Step(noCgroup.clk.Now())
	if got := read(t, oom); got != "-999" {
		t.Errorf("OOM score after 5 minutes: %s, want -999", got)
	}
}

// --system-cgroups=/ is refused as the kubelet refuses it.
func TestNewRefusesRootSystemCgroup(t *testing.T) {
	c := config(func(c *v1beta1.OrchletConfiguration) { c.SystemCgroups = "/" })
	if _, err := New(Options{Clock: clock.NewMock(), Config: c}); err == nil || !strings.Contains(err.Error(), `system container cannot be root ("/")`) {
		t.Errorf("New = %v", err)
	}
}

// A pods' cgroup update the kernel refuses (its pods use more) is retried every minute.
func TestPodsUpdateRetried(t *testing.T) {
	h := v1Tree(t, "orchpods")
	limit := filepath.Join(h.Root, "memory", "orchpods", "memory.limit_in_bytes")
	mustMkdir(t, limit) // a directory: the write fails, as the kernel's EBUSY would
	hr := newHarness(t, h, nil)
	if err := hr.m.Start(); err != nil {
		t.Fatalf("Start = %v; an existing cgroup's failed update is retried, not fatal", err)
	}
	if got := hr.rec.Events(); len(got) != 1 || !strings.HasPrefix(got[0], `Warning FailedNodeAllocatableEnforcement Node/node-a: Failed to update Node Allocatable Limits "/orchpods"`) {
		t.Fatalf("events %q", got)
	}
	if err := os.Remove(limit); err != nil {
		t.Fatal(err)
	}
	hr.clk.Add(time.Minute)
	hr.m.Step(hr.clk.Now())
	if got := read(t, limit); got != strconv.FormatInt(8*gib, 10) {
		t.Errorf("limit after the retry: %s", got)
	}
}
