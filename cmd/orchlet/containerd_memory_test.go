//go:build e2e

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// memoryManifest is a Guaranteed pod: its memory the Static memory manager places on NUMA nodes.
const memoryManifest = `apiVersion: v1
kind: Pod
metadata: {name: numa}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: sleeper
    image: ` + e2eImage + `
    imagePullPolicy: IfNotPresent
    command: [sleep, "3600"]
    resources: {limits: {cpu: 100m, memory: 32Mi}}
`

// TestStandaloneMemoryManagerOnContainerd runs a Guaranteed pod on containerd and runc under
// --memory-manager-policy=Static and reads back from the host's cgroup filesystem the container's
// cpuset.mems, and from containerd the OCI spec's cpu.mems: the NUMA nodes
// <root-dir>/memory_manager_state gives it. The machine's NUMA layout
// is read from sysfs; on a host of one node that is node 0, still a check that the runtime was
// given the nodes and the checkpoint agrees with the kernel.
func TestStandaloneMemoryManagerOnContainerd(t *testing.T) {
	ctd := startContainerd(t)
	podName := "numa-" + e2eNode
	cleanupPodLogs(t, podName)
	manifests, root := t.TempDir(), t.TempDir()
	a := startServing(t, "--container-runtime-endpoint", "unix://"+ctd.sock, "--pod-manifest-path", manifests,
		"--file-check-frequency=1s", "--hostname-override="+e2eNode, "--fail-swap-on=false", "--cert-dir="+t.TempDir(),
		"--root-dir="+root, "--memory-manager-policy=Static", "--reserved-memory=0:memory=100Mi", "--eviction-hard=memory.available<100Mi")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("orchlet stderr:\n%s", a.stderr.String())
		}
	})
	id := runSleeperPod(t, ctd, a, manifests, "numa.yaml", memoryManifest, podName)

	// The checkpoint: the sleeper's 32Mi on some NUMA nodes.
	data, err := os.ReadFile(filepath.Join(root, "memory_manager_state"))
	if err != nil {
		t.Fatal(err)
	}
	var cp struct {
		PolicyName string `json:"policyName"`
		Entries    map[string]map[string][]struct {
			NUMAAffinity []int  `json:"numaAffinity"`
			Type         string `json:"type"`
			Size         uint64 `json:"size"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(data, &cp); err != nil {
		t.Fatalf("memory_manager_state: %v\n%s", err, data)
	}
	var nodes []string
	for _, cs := range cp.Entries {
		for _, b := range cs["sleeper"] {
			if b.Type == "memory" && b.Size == 32<<20 {
				for _, n := range b.NUMAAffinity {
					nodes = append(nodes, strconv.Itoa(n))
				}
			}
		}
	}
	if cp.PolicyName != "Static" || len(nodes) == 0 {
		t.Fatalf("memory_manager_state gives the sleeper no 32Mi of memory on NUMA nodes:\n%s", data)
	}

	// What the agent asked of the runtime: the OCI spec containerd made from CreateContainer carries
	// the nodes (on a one-node host the kernel's default is the same, so this shows they were sent).
	var info struct {
		Spec struct {
			Linux struct {
				Resources struct {
					CPU struct {
						Mems string `json:"mems"`
					} `json:"cpu"`
				} `json:"resources"`
			} `json:"linux"`
		} `json:"Spec"`
	}
	out := ctd.ctrOut("containers", "info", id)
	if err := json.Unmarshal([]byte(out), &info); err != nil {
		t.Fatalf("ctr containers info %s: %v\n%s", id, err, out)
	}
	if got, want := info.Spec.Linux.Resources.CPU.Mems, strings.Join(nodes, ","); got != want {
		t.Errorf("the sleeper's OCI spec has cpu.mems %q, want the checkpoint's %q", got, want)
	}

	// The kernel's view of the running container: cpuset.mems as the checkpoint says (a range
	// list, "0" or "0-1", as cpuset writes it).
	cg := cgroupFiles(t, ctd.taskPID(t, id))
	file := "cpuset.mems"
	if cg.v2 {
		file = "cpuset.mems.effective"
	}
	got := cg.read(t, "cpuset", file)
	if want := rangeList(nodes); got != want {
		t.Errorf("the sleeper's %s is %q, the checkpoint gives it NUMA nodes %q", file, got, want)
	}
	t.Logf("the sleeper's %s: %s; memory_manager_state: %s", file, got, data)
}

// rangeList writes sorted node numbers as cpuset lists them: runs of consecutive numbers as a-b.
func rangeList(nodes []string) string {
	var out []string
	for i := 0; i < len(nodes); {
		j := i
		for j+1 < len(nodes) && atoi(nodes[j+1]) == atoi(nodes[j])+1 {
			j++
		}
		if j > i {
			out = append(out, nodes[i]+"-"+nodes[j])
		} else {
			out = append(out, nodes[i])
		}
		i = j + 1
	}
	return strings.Join(out, ",")
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
