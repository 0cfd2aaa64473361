package pods

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/pods/qos"
	fakescript "orch.io/orch/fakecri/script"
)

// A deleted pod whose stopped container and sandbox the runtime refuses to remove, and whose cgroup
// still holds a process the runtime lost track of, is done all the same, as containerd 1.6 leaves a
// container whose StartContainer was cancelled mid-way: the process is killed with the pod's
// cgroup, the pod is Stopped (its API object may go), and the removals are left to the container
// GC. Without either rule the teardown failed and retried, and the pod stayed.
func TestTeardownWithRemovalsRefused(t *testing.T) {
	root := t.TempDir()
	cfg := config(func(c *v1beta1.OrchletConfiguration) {
		c.CgroupsPerQOS, c.CgroupRoot, c.CgroupDriver = true, "/", "cgroupfs"
	})
	refused := &fakescript.FaultError{Code: "FailedPrecondition", Message: "cannot delete running task: failed precondition"}
	script := &fakescript.Script{Faults: []fakescript.FaultRule{{Method: "Remove*", Error: refused}}}
	h := newHarness(t, script, cfg, func(o *Options) { o.Node = Node{Cgroups: qos.CgroupV2{Root: root}, MemoryCapacity: 1 << 30} })
	pod := newPod("p", ctr("a", "i"))
	h.add(pod)
	h.runUntil(time.Second)
	podCgroup := filepath.Join(root, "orchpods/besteffort/poduid-p")
	if _, err := os.Stat(podCgroup); err != nil {
		t.Fatalf("no pod cgroup: %v", err)
	}

	// A task's process left in a cgroup under the pod's, as runc's init of a stranded task.
	stranded := exec.Command("sleep", "300")
	if err := stranded.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- stranded.Wait() }()
	t.Cleanup(func() { _ = stranded.Process.Kill() })
	taskCgroup := filepath.Join(podCgroup, "stranded")
	if err := os.MkdirAll(taskCgroup, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(taskCgroup, "cgroup.procs"), []byte(strconv.Itoa(stranded.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	h.remove(pod)
	h.runUntil(5 * time.Second)
	if len(h.calls("RemoveContainer", "")) == 0 || len(h.calls("RemovePodSandbox", "")) == 0 {
		t.Errorf("the teardown asked no removal: RemoveContainer %v, RemovePodSandbox %v", h.calls("RemoveContainer", ""), h.calls("RemovePodSandbox", ""))
	}
	for _, c := range append(h.calls("RemoveContainer", ""), h.calls("RemovePodSandbox", "")...) {
		if c.Code != "FailedPrecondition" {
			t.Errorf("%s %s answered %s, want the fault's FailedPrecondition", c.Method, c.Request, c.Code)
		}
	}
	if !h.m.Stopped(pod.UID) {
		t.Error("the pod is not Stopped: a refused removal holds it")
	}
	if evs := h.rec.reasons(ReasonFailedSync); len(evs) != 0 {
		t.Errorf("FailedSync events %v: the teardown failed", evs)
	}
	if len(h.containers()) != 1 || len(h.sandboxes()) != 1 {
		t.Errorf("containers %d, sandboxes %d left for the GC; want 1 and 1", len(h.containers()), len(h.sandboxes()))
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the process in the pod's cgroup was not killed")
	}
	if _, err := os.Stat(podCgroup); !os.IsNotExist(err) {
		t.Errorf("the pod cgroup outlived the pod: %v", err)
	}
}
