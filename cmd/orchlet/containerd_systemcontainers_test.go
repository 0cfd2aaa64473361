//go:build e2e

package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"orch.io/orch/components/orchlet/cm"
	"orch.io/orch/components/orchlet/server"
)

// runtimeCgroup is the cgroup this test puts containerd in, as its service unit would.
const runtimeCgroup = "/orch-e2e-runtime"

// TestStandaloneSystemContainersOnContainerd reads /stats/summary's system containers from an
// agent on containerd, as the kubelet's summary reports them: containerd in a cgroup of its own
// (moved there by the test, as a service manager puts a runtime in its unit's; the kubelet v1.34
// moves no runtime) named by --runtime-cgroups is "runtime", its CPU time and memory those the
// host's cgroup files show; the pods' cgroup is "pods", and the agent's own cgroup "kubelet" where
// the kubelet would find one (on cgroup v1 only when the agent's cpu and memory cgroups are one).
func TestStandaloneSystemContainersOnContainerd(t *testing.T) {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	v2 := err == nil
	// Registered first, so it runs last: after containerd and its shims are gone.
	t.Cleanup(func() { removeHostCgroup(runtimeCgroup, v2) })
	makeHostCgroup(t, runtimeCgroup, v2)
	ctd := startContainerd(t)
	// The accounting hierarchies only: a v1 cpuset cgroup would need its CPUs set first.
	dirs := []string{filepath.Join("/sys/fs/cgroup", runtimeCgroup)}
	if !v2 {
		dirs = []string{filepath.Join("/sys/fs/cgroup", "cpuacct", runtimeCgroup), filepath.Join("/sys/fs/cgroup", "memory", runtimeCgroup)}
	}
	for _, dir := range dirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(ctd.cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a := startServing(t, "--container-runtime-endpoint", "unix://"+ctd.sock, "--hostname-override="+e2eNode,
		"--fail-swap-on=false", "--cert-dir="+t.TempDir(), "--cgroup-root=/orch-e2e-sys", "--runtime-cgroups="+runtimeCgroup)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("orchlet stderr:\n%s", a.stderr.String())
		}
		_ = a.stop(t)
		removeHostCgroup("/orch-e2e-sys", v2)
	})
	// The runtime's CPU time read from the host before the summary, and its memory after: the
	// summary's figures lie between what the host shows around it.
	cpuFile, memFile := "cpu.stat", "memory.current"
	if !v2 {
		cpuFile, memFile = "cpuacct.usage", "memory.usage_in_bytes"
	}
	before := hostCPU(t, dirs[0], cpuFile, v2)
	var summary server.Summary
	resp, err := http.Get("http://127.0.0.1:" + a.readOnly + "/stats/summary")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&summary); err != nil {
		t.Fatal(err)
	}
	after := hostCPU(t, dirs[0], cpuFile, v2)
	t.Logf("system containers: %s", mustJSON(t, summary.Node.SystemContainers))
	byName := map[string]server.ContainerStats{}
	for _, c := range summary.Node.SystemContainers {
		byName[c.Name] = c
	}
	for _, name := range []string{"runtime", "pods"} {
		if _, ok := byName[name]; !ok {
			t.Fatalf("system containers %+v lack %s", summary.Node.SystemContainers, name)
		}
	}
	// The agent runs in this test's cgroups.
	_, err = cm.ProcessCgroup("/proc", os.Getpid(), v2)
	if _, ok := byName["kubelet"]; ok != (err == nil) {
		t.Errorf("kubelet system container reported: %v; the agent's own cgroup: %v", ok, err)
	}
	rt := byName["runtime"]
	if rt.CPU == nil || rt.CPU.UsageCoreNanoSeconds == nil || *rt.CPU.UsageCoreNanoSeconds < before || *rt.CPU.UsageCoreNanoSeconds > after {
		t.Errorf("runtime CPU %+v, want between %d and %d ns as the host's %s shows", rt.CPU, before, after, cpuFile)
	}
	mem, err := strconv.ParseUint(readHost(t, filepath.Join(dirs[len(dirs)-1], memFile)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if rt.Memory == nil || rt.Memory.UsageBytes == nil || *rt.Memory.UsageBytes == 0 || *rt.Memory.UsageBytes > 4*mem || mem > 4**rt.Memory.UsageBytes {
		t.Errorf("runtime memory %+v, the host's %s %d", rt.Memory, memFile, mem)
	}
	if rt.Memory.WorkingSetBytes == nil || *rt.Memory.WorkingSetBytes > *rt.Memory.UsageBytes {
		t.Errorf("runtime working set %v over its usage %d", rt.Memory.WorkingSetBytes, *rt.Memory.UsageBytes)
	}
	if k, ok := byName["kubelet"]; ok && (k.StartTime.IsZero() || time.Since(k.StartTime.Time) > time.Minute || k.Memory == nil || *k.Memory.UsageBytes == 0) {
		t.Errorf("kubelet system container %+v", k)
	}
}

// hostCPU is a cgroup's CPU time in nanoseconds as the host shows it.
func hostCPU(t *testing.T, dir, file string, v2 bool) uint64 {
	t.Helper()
	data := readHost(t, filepath.Join(dir, file))
	if v2 {
		for _, line := range strings.Split(data, "\n") {
			if v, ok := strings.CutPrefix(line, "usage_usec "); ok {
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return n * 1000
			}
		}
		t.Fatalf("%s has no usage_usec:\n%s", file, data)
	}
	n, err := strconv.ParseUint(data, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
