package eviction

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/yaml"

	"orch.io/orch/components/orchlet/pods"
	"orch.io/orch/components/orchlet/pods/labels"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/fakecritest"
	fakescript "orch.io/orch/fakecri/script"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestHostNode(t *testing.T) {
	dir := t.TempDir()
	proc, cg := filepath.Join(dir, "proc"), filepath.Join(dir, "cgroup")
	write(t, filepath.Join(proc, "meminfo"), "MemTotal:       1024000 kB\nMemFree:         24000 kB\nInactive(file):  100000 kB\n")
	write(t, filepath.Join(proc, "sys/kernel/pid_max"), "4194304\n")
	write(t, filepath.Join(proc, "loadavg"), "0.52 0.58 0.59 3/1234 5678\n")
	h := HostNode{CgroupRoot: cg, ProcRoot: proc}

	// A root cgroup without memory.current or memory.stat: meminfo's usage less Inactive(file).
	capacity, usage, ws, err := h.Memory()
	if err != nil || capacity != 1024000*1024 || usage != (1024000-24000)*1024 || ws != (1024000-24000-100000)*1024 {
		t.Fatalf("Memory = %d, %d, %d, %v", capacity, usage, ws, err)
	}
	// cgroup v1's memory controller: memory.usage_in_bytes less memory.stat's total_inactive_file.
	write(t, filepath.Join(cg, "memory/memory.usage_in_bytes"), "600000000\n")
	write(t, filepath.Join(cg, "memory/memory.stat"), "inactive_file 1\ntotal_inactive_file 50000000\n")
	if capacity, usage, ws, err = h.Memory(); err != nil || capacity != 1024000*1024 || usage != 600000000 || ws != 550000000 {
		t.Fatalf("Memory with cgroup v1 files = %d, %d, %d, %v; want the usage 600000000, working set 550000000", capacity, usage, ws, err)
	}
	// cgroup v2's: memory.current less memory.stat's inactive_file.
	write(t, filepath.Join(cg, "memory.current"), "500000000\n")
	write(t, filepath.Join(cg, "memory.stat"), "anon 1000\nfile 2000\ninactive_file 100000000\nactive_file 5\n")
	if capacity, usage, ws, err = h.Memory(); err != nil || capacity != 1024000*1024 || usage != 500000000 || ws != 400000000 {
		t.Fatalf("Memory with cgroup v2 files = %d, %d, %d, %v; want the working set 400000000", capacity, usage, ws, err)
	}
	max, running, err := h.Pids()
	if err != nil || max != 4194304 || running != 1234 {
		t.Fatalf("Pids = %d, %d, %v", max, running, err)
	}
	fs, err := h.Statfs(dir)
	if err != nil || fs.CapacityBytes == 0 || fs.AvailableBytes > fs.CapacityBytes || fs.Inodes == 0 {
		t.Fatalf("Statfs = %+v, %v", fs, err)
	}
	if _, err := h.Statfs(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("statfs of a missing path succeeded")
	}
	write(t, filepath.Join(proc, "loadavg"), "garbage\n")
	if _, _, err := h.Pids(); err == nil {
		t.Fatal("a loadavg without running/total was accepted")
	}
}

// fakeNode answers Statfs from the runtime's filesystems (by mountpoint) and RootDir's.
type fakeNode struct {
	rt      *fakecri.Runtime
	rootDir string
}

func (n fakeNode) Memory() (uint64, uint64, uint64, error) { return 1000 * mi, 350 * mi, 300 * mi, nil }
func (n fakeNode) Pids() (uint64, uint64, error)           { return 32768, 400, nil }
func (n fakeNode) Statfs(path string) (FsStats, error) {
	for _, f := range n.rt.Filesystems() {
		if f.Mountpoint == path || (path == n.rootDir && f.Name == "rootfs") {
			return FsStats{AvailableBytes: f.AvailableBytes, CapacityBytes: f.CapacityBytes, InodesFree: f.InodesFree, Inodes: f.Inodes}, nil
		}
	}
	return FsStats{}, os.ErrNotExist
}

type criStats struct {
	cri.RuntimeService
	cri.ImageManagerService
}

func TestCRIObserverOverFakecri(t *testing.T) {
	var script fakescript.Script
	if err := yaml.Unmarshal([]byte(`
node: {preloadImages: ["app:1"]}
containers:
  - match: {image: "app*"}
    usage: {memory: 64Mi, disk: 5Mi, inodes: 50, pids: 3}
`), &script); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewMock()
	rt, sock := fakecritest.Start(t, fakecri.Options{Clock: clk, Seed: 1, Script: &script})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, is, err := pods.Connect(ctx, sock, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	sbCfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"},
		Labels:   map[string]string{labels.PodUID: "uid-1"},
	}
	sb, err := rs.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "app:1"}}, sbCfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Minute)
	o := &CRIObserver{Node: fakeNode{rt: rt, rootDir: "/var/lib/orchlet"}, CRI: criStats{rs, is}, RootDir: "/var/lib/orchlet", AllocatableMemory: 900 * mi, SeparateDiskGC: true}
	s, err := o.Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.Memory.AvailableBytes != 700*mi || s.Pids.MaxPID != 32768 || s.Pids.Running != 400 {
		t.Fatalf("node: memory %+v pids %+v", s.Memory, s.Pids)
	}
	if len(s.Pods) != 1 || s.Pods[0].UID != "uid-1" || len(s.Pods[0].Containers) != 1 {
		t.Fatalf("pods %+v", s.Pods)
	}
	p, c := s.Pods[0], s.Pods[0].Containers[0]
	if c.Name != "app" || c.MemoryWorkingSetBytes != 64*mi || c.RootfsBytes != 5*mi || c.RootfsInodes != 50 || p.Processes < 3 || p.MemoryWorkingSetBytes < 64*mi {
		t.Fatalf("pod %+v container %+v", p, c)
	}
	if s.PodsMemory.WorkingSetBytes != p.MemoryWorkingSetBytes || s.PodsMemory.AvailableBytes != 900*mi-p.MemoryWorkingSetBytes {
		t.Fatalf("pods memory %+v", s.PodsMemory)
	}
	if s.NodeFs == nil || s.ImageFs == nil || *s.NodeFs == *s.ImageFs {
		t.Fatalf("nodefs %+v imagefs %+v: fakecri's root and image filesystems are separate", s.NodeFs, s.ImageFs)
	}
	if s.ContainerFs != nil {
		t.Fatalf("containerfs %+v: writable layers are on the image filesystem by default", s.ContainerFs)
	}
}

// blind cannot stat the runtime's filesystems: only --root-dir.
type blind struct{ fakeNode }

func (b blind) Statfs(path string) (FsStats, error) {
	if path != b.rootDir {
		return FsStats{}, os.ErrNotExist
	}
	return b.fakeNode.Statfs(path)
}

// A filesystem the agent cannot see is left out, and its signals with it; the others are decided.
func TestCRIObserverPartial(t *testing.T) {
	rt, sock := fakecritest.Start(t, fakecri.Options{Seed: 1})
	ctx := context.Background()
	rs, is, err := pods.Connect(ctx, sock, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	o := &CRIObserver{Node: blind{fakeNode{rt: rt, rootDir: "/var/lib/orchlet"}}, CRI: criStats{rs, is}, RootDir: "/var/lib/orchlet"}
	s, err := o.Observe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.ImageFs != nil || s.NodeFs == nil || s.Memory == nil || len(s.Unobserved) != 1 || !strings.HasPrefix(s.Unobserved[0], "imagefs: ") {
		t.Fatalf("stats %+v", s)
	}
	obs := makeSignalObservations(s)
	for _, sig := range []Signal{SignalImageFsAvailable, SignalImageFsInodesFree, SignalContainerFsAvailable} {
		if _, ok := obs[sig]; ok {
			t.Errorf("%s observed from an unobserved filesystem", sig)
		}
	}
	if _, ok := obs[SignalNodeFsAvailable]; !ok {
		t.Error("nodefs.available not observed")
	}
}

// Each pod's stats are its own sandbox's and containers', a sandbox without the pod's UID label
// left out; the containers of one pod, cut from one array with the others', grow apart from them.
func TestPodStatsFromCRI(t *testing.T) {
	u := func(v uint64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: v} }
	ctr := func(name string, ws, rootfs uint64) *runtimeapi.ContainerStats {
		return &runtimeapi.ContainerStats{
			Attributes:    &runtimeapi.ContainerAttributes{Metadata: &runtimeapi.ContainerMetadata{Name: name}},
			Memory:        &runtimeapi.MemoryUsage{WorkingSetBytes: u(ws)},
			WritableLayer: &runtimeapi.FilesystemUsage{UsedBytes: u(rootfs), InodesUsed: u(rootfs / 10)},
		}
	}
	sb := func(uid string, ws uint64, cs ...*runtimeapi.ContainerStats) *runtimeapi.PodSandboxStats {
		return &runtimeapi.PodSandboxStats{
			Attributes: &runtimeapi.PodSandboxAttributes{Labels: map[string]string{labels.PodUID: uid}},
			Linux: &runtimeapi.LinuxPodSandboxStats{Memory: &runtimeapi.MemoryUsage{WorkingSetBytes: u(ws), UsageBytes: u(ws + 1)},
				Process: &runtimeapi.ProcessUsage{ProcessCount: u(3)}, Containers: cs},
		}
	}
	got := PodStatsFromCRI([]*runtimeapi.PodSandboxStats{
		sb("a", 100, ctr("app", 60, 1000), ctr("sidecar", 40, 2000)),
		sb("", 999, ctr("x", 1, 1)),
		sb("b", 50),
		sb("c", 70, ctr("app", 70, 3000)),
	})
	want := []PodStats{
		{UID: "a", MemoryWorkingSetBytes: 100, MemoryUsageBytes: 101, Processes: 3, Containers: []ContainerStats{
			{Name: "app", MemoryWorkingSetBytes: 60, RootfsBytes: 1000, RootfsInodes: 100},
			{Name: "sidecar", MemoryWorkingSetBytes: 40, RootfsBytes: 2000, RootfsInodes: 200},
		}},
		{UID: "b", MemoryWorkingSetBytes: 50, MemoryUsageBytes: 51, Processes: 3},
		{UID: "c", MemoryWorkingSetBytes: 70, MemoryUsageBytes: 71, Processes: 3, Containers: []ContainerStats{
			{Name: "app", MemoryWorkingSetBytes: 70, RootfsBytes: 3000, RootfsInodes: 300},
		}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	got[0].Containers = append(got[0].Containers, ContainerStats{Name: "added"})
	if got[2].Containers[0].Name != "app" {
		t.Fatalf("appending to a's containers wrote over c's: %+v", got[2].Containers)
	}
}
