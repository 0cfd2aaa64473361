//go:build e2e

package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/components/orchlet/pods/qos"
)

// orphansRoot is the --cgroup-root of the test's agent, so that its housekeeping looks over no
// other agent's pod cgroups on the host; removed when the test ends.
const orphansRoot = "/orch-e2e-orphans"

// TestOrphanedPodCgroupsOnContainerd makes by hand a stale pod cgroup under the agent's orchpods,
// its Burstable cgroup, with a process in it, as an agent killed mid-teardown leaves one; the
// agent, running a pod on containerd, kills the process and removes the cgroup in every hierarchy
// once the cgroup has been unknown for the grace, and keeps its live pod's cgroup.
func TestOrphanedPodCgroupsOnContainerd(t *testing.T) {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	v2 := err == nil
	t.Cleanup(func() { removeHostCgroup(orphansRoot, v2) })
	stale := orphansRoot + "/orchpods/burstable/pod0d0e0a0d-0000-4000-8000-57a1e0000000"
	makeHostCgroup(t, stale, v2)
	orphan := exec.Command("sleep", "600")
	if err := orphan.Start(); err != nil {
		t.Fatal(err)
	}
	orphanDone := make(chan error, 1)
	go func() { orphanDone <- orphan.Wait() }()
	t.Cleanup(func() { _ = orphan.Process.Kill() })
	// Into the stale cgroup of each hierarchy a pod's process would be in (cpuset needs its CPUs
	// set first, and the runtime, not the agent, gives a pod one).
	for _, dir := range hostCgroupDirs(stale, v2) {
		if c := filepath.Base(strings.TrimSuffix(dir, stale)); !v2 && c != "cpu" && c != "memory" && c != "pids" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(orphan.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	ctd := startContainerd(t)
	podName := e2ePodName + "-" + e2eNode
	cleanupPodLogs(t, podName)
	manifests := t.TempDir()
	a := startServing(t, "--container-runtime-endpoint", "unix://"+ctd.sock, "--pod-manifest-path", manifests,
		"--file-check-frequency=1s", "--hostname-override="+e2eNode, "--fail-swap-on=false", "--cert-dir="+t.TempDir(),
		"--cgroup-driver=cgroupfs", "--cgroup-root="+orphansRoot, "-v=3")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("orchlet stderr:\n%s", a.stderr.String())
		}
	})
	id := runSleeperPod(t, ctd, a, manifests, "e2e.yaml", e2eManifest, podName)
	started := time.Now()

	apptest.WaitWithin(t, clock.New(), "the stale pod cgroup removed", qos.OrphanGrace+30*time.Second, func() (bool, error) {
		var left []string
		for _, dir := range append(hostCgroupDirs(stale, v2), filepath.Join("/sys/fs/cgroup/unified", stale)) {
			if _, err := os.Stat(dir); err == nil {
				left = append(left, dir)
			}
		}
		return len(left) == 0, fmt.Errorf("left: %v", left)
	})
	t.Logf("the stale pod cgroup removed %v after the pod started", time.Since(started).Round(time.Second))
	select {
	case err := <-orphanDone:
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != -1 {
			t.Errorf("the stale cgroup's process ended with %v, want killed", err)
		}
	case <-time.After(10 * time.Second):
		t.Error("the stale cgroup's process still runs")
	}
	// The live pod's cgroup, the parent of its container's, is where it was, the sleeper in it.
	controllers := []string{"cpu", "memory", "pids"}
	if v2 {
		controllers = []string{""}
	}
	for _, c := range controllers {
		dir := cgroupFiles(t, ctd.taskPID(t, id)).paths[c]
		if !strings.Contains(dir, orphansRoot+"/orchpods/besteffort/pod") {
			t.Errorf("the sleeper's %s cgroup %s is not under its pod's", c, dir)
		} else if _, err := os.Stat(filepath.Dir(dir)); err != nil {
			t.Errorf("the live pod's %s cgroup: %v", c, err)
		}
	}
}
