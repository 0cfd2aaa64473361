package pods

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/pods/qos"
	fakescript "orch.io/orch/fakecri/script"
)

// Housekeeping removes, once every source has sent its pods and the grace has passed, the pod
// cgroups of pods the agent does not know: one left by hand, one a runtime left in cpuset with its
// container's cgroup under it, and the Burstable cgroup of an orphan the agent tore down without
// its spec (the teardown removes the BestEffort cgroup the spec-less pod would have). A live
// pod's cgroup stays.
func TestOrphanedPodCgroupsRemoved(t *testing.T) {
	root := t.TempDir()
	for _, s := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids"} {
		if err := os.Mkdir(filepath.Join(root, s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stale := []string{"cpu/orchpods/burstable/podstale", "pids/orchpods/burstable/podstale",
		"cpuset/orchpods/besteffort/podleft/0123abcd", "cpu/orchpods/burstable/poduid-old", "memory/orchpods/burstable/poduid-old"}
	for _, d := range stale {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var ready atomic.Bool
	cfg := config(func(c *v1beta1.OrchletConfiguration) {
		c.CgroupsPerQOS, c.CgroupRoot, c.CgroupDriver = true, "/", "cgroupfs"
	})
	h := newHarness(t, &fakescript.Script{Node: fakescript.NodeScript{PreloadImages: []string{"nginx:1.27"}}}, cfg, func(o *Options) {
		o.Node = Node{Cgroups: qos.CgroupV1{Root: root}, MemoryCapacity: 1 << 30}
		o.SourcesReady = ready.Load
	})
	old := newPod("old", withResources(ctr("web", "nginx:1.27"), rl("cpu", "100m"), nil))
	if _, err := h.rt.RunPodSandbox(h.ctx, &runtimeapi.RunPodSandboxRequest{Config: h.m.sandboxConfig(old, 0)}); err != nil {
		t.Fatal(err)
	}
	h.add(newPod("web", ctr("web", "nginx:1.27")))
	left := func() map[string]bool {
		out := map[string]bool{}
		for _, d := range append(stale, "cpu/orchpods/besteffort/poduid-web") {
			if _, err := os.Stat(filepath.Join(root, d)); err == nil {
				out[d] = true
			}
		}
		return out
	}
	h.runUntil(2 * time.Minute)
	if got := left(); len(got) != len(stale)+1 {
		t.Fatalf("cgroups left before the sources were ready %v, want all %d", got, len(stale)+1)
	}
	ready.Store(true)
	h.runUntil(2*time.Minute + qos.OrphanGrace - 5*time.Second)
	if got := left(); len(got) != len(stale)+1 {
		t.Fatalf("cgroups left within the grace %v, want all %d", got, len(stale)+1)
	}
	if n := len(h.calls("RemovePodSandbox", "")); n != 1 {
		t.Errorf("the orphan's sandbox was removed %d times, want once", n)
	}
	h.runUntil(2*time.Minute + qos.OrphanGrace + 5*time.Second)
	if got := left(); len(got) != 1 || !got["cpu/orchpods/besteffort/poduid-web"] {
		t.Errorf("cgroups left after the grace %v, want the live pod's only", got)
	}
}
