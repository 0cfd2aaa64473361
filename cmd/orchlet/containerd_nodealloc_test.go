//go:build e2e

package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// The cgroups this test makes or has the agent make, removed when it ends.
const (
	allocRoot     = "/orch-e2e-alloc"
	allocReserved = "/orch-e2e-alloc-reserved"
	allocSystem   = "/orch-e2e-alloc-system"
)

// TestStandaloneNodeAllocatableOnContainerd runs a pod on containerd and runc with node allocatable
// enforced and reads back from the host what the agent did before the pod: the pods' cgroup
// (orchpods under --cgroup-root) limited to capacity less the reservations and holding the pod,
// the reserved cgroups limited to theirs (cpu only for the compressible level), and the agent's
// own OOM score adjustment and open-files limit (raised and lowered, which needs no
// CAP_SYS_RESOURCE).
func TestStandaloneNodeAllocatableOnContainerd(t *testing.T) {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	v2 := err == nil
	// Registered first, so it runs last: after the agent, the pods and containerd are gone.
	t.Cleanup(func() {
		for _, name := range []string{allocRoot, allocReserved, allocSystem} {
			removeHostCgroup(name, v2)
		}
	})
	for _, name := range []string{allocReserved, allocSystem} {
		makeHostCgroup(t, name, v2)
	}
	ctd := startContainerd(t)
	endpoint := "unix://" + ctd.sock
	podName := e2ePodName + "-" + e2eNode
	cleanupPodLogs(t, podName)
	manifests := t.TempDir()
	a := startServing(t, "--container-runtime-endpoint", endpoint, "--pod-manifest-path", manifests,
		"--file-check-frequency=1s", "--hostname-override="+e2eNode, "--fail-swap-on=false", "--cert-dir="+t.TempDir(),
		"--cgroup-driver=cgroupfs", "--cgroup-root="+allocRoot,
		"--kube-reserved=cpu=500m,memory=1Gi,pid=100", "--kube-reserved-cgroup="+allocReserved,
		"--system-reserved=cpu=1,memory=512Mi", "--system-reserved-cgroup="+allocSystem,
		"--enforce-node-allocatable=pods,orch-reserved,system-reserved-compressible",
		"--oom-score-adj=500", "--max-open-files=4096")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("orchlet stderr:\n%s", a.stderr.String())
		}
	})
	pid := strconv.Itoa(a.cmd.Process.Pid)

	// The agent's own process, before any pod.
	if got := readHost(t, "/proc/"+pid+"/oom_score_adj"); got != "500" {
		t.Errorf("the agent's oom_score_adj %s, want 500", got)
	}
	if got := openFilesLimit(t, pid); got != "4096 4096" {
		t.Errorf("the agent's open-files limit (soft hard) %q, want 4096 4096", got)
	}

	// The pods' cgroup: capacity less kube- and system-reserved, the eviction threshold not held.
	memTotal, pidMax := hostMemTotal(t), readHost(t, "/proc/sys/kernel/pid_max")
	pidsLeft, _ := strconv.ParseInt(pidMax, 10, 64)
	podsCPU := int64(runtime.NumCPU())*1000 - 1500
	checkCgroup(t, v2, allocRoot+"/orchpods", map[string]string{
		"memory": strconv.FormatInt(memTotal-(1<<30)-(512<<20), 10),
		"cpu":    shares(podsCPU, v2),
		"pids":   strconv.FormatInt(pidsLeft-100, 10),
	})
	checkCgroup(t, v2, allocReserved, map[string]string{"memory": strconv.FormatInt(1<<30, 10), "cpu": shares(500, v2), "pids": "100"})
	checkCgroup(t, v2, allocSystem, map[string]string{"memory": "max", "cpu": shares(1000, v2)})

	// A pod runs inside the pods' cgroup; it goes before the cgroups it ran in are removed.
	id := runSleeperPod(t, ctd, a, manifests, "e2e.yaml", e2eManifest, podName)
	cg := cgroupFiles(t, ctd.taskPID(t, id))
	memoryPath := cg.paths["memory"]
	if v2 {
		memoryPath = cg.paths[""]
	}
	if want := "/sys/fs/cgroup/" + map[bool]string{false: "memory", true: ""}[v2]; !strings.HasPrefix(memoryPath, filepath.Join(want, allocRoot, "orchpods")+"/") {
		t.Errorf("the sleeper's memory cgroup %s is not under the pods' cgroup %s/orchpods", memoryPath, allocRoot)
	}
}

// shares is what the container manager writes for milliCPU: cpu.shares on v1, cpu.weight on v2.
func shares(milli int64, v2 bool) string {
	s := max(milli*1024/1000, 2)
	if v2 {
		return strconv.FormatInt(1+((s-2)*9999)/262142, 10)
	}
	return strconv.FormatInt(s, 10)
}

// checkCgroup compares a cgroup's memory limit ("max": none), cpu shares (weight on v2) and pids
// limit with want, by controller.
func checkCgroup(t *testing.T, v2 bool, name string, want map[string]string) {
	t.Helper()
	files := map[string]string{"memory": "memory.limit_in_bytes", "cpu": "cpu.shares", "pids": "pids.max"}
	if v2 {
		files = map[string]string{"memory": "memory.max", "cpu": "cpu.weight", "pids": "pids.max"}
	}
	for controller, w := range want {
		dir := filepath.Join("/sys/fs/cgroup", controller, name)
		if v2 {
			dir = filepath.Join("/sys/fs/cgroup", name)
		}
		got := readHost(t, filepath.Join(dir, files[controller]))
		if w == "max" && got == "9223372036854771712" {
			got = "max" // v1's unset memory limit
		}
		if got != w {
			t.Errorf("cgroup %s: %s %s, want %s", name, files[controller], got, w)
		}
	}
}

func readHost(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

func hostMemTotal(t *testing.T) int64 {
	t.Helper()
	for _, line := range strings.Split(readHost(t, "/proc/meminfo"), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb * 1024
		}
	}
	t.Fatal("/proc/meminfo has no MemTotal")
	return 0
}

// openFilesLimit is the soft and hard "Max open files" of /proc/<pid>/limits.
func openFilesLimit(t *testing.T, pid string) string {
	t.Helper()
	for _, line := range strings.Split(readHost(t, "/proc/"+pid+"/limits"), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			if f := strings.Fields(rest); len(f) >= 2 {
				return f[0] + " " + f[1]
			}
		}
	}
	t.Fatalf("/proc/%s/limits has no open-files limit", pid)
	return ""
}

// makeHostCgroup makes a cgroup as an operator makes a reserved one: in every v1 hierarchy, or in
// the unified one.
func makeHostCgroup(t *testing.T, name string, v2 bool) {
	t.Helper()
	for _, dir := range hostCgroupDirs(name, v2) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// removeHostCgroup removes the cgroup and those under it, deepest first, the runtime's copy in a
// hybrid host's unified hierarchy included.
func removeHostCgroup(name string, v2 bool) {
	dirs := hostCgroupDirs(name, v2)
	if !v2 {
		dirs = append(dirs, filepath.Join("/sys/fs/cgroup", "unified", name))
	}
	for _, top := range dirs {
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = os.Remove(dirs[i])
		}
	}
}

func hostCgroupDirs(name string, v2 bool) []string {
	if v2 {
		return []string{filepath.Join("/sys/fs/cgroup", name)}
	}
	entries, _ := os.ReadDir("/sys/fs/cgroup")
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && e.Name() != "unified" {
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", e.Name(), name))
		}
	}
	return dirs
}
