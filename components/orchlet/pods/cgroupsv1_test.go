package pods

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/pods/qos"
)

// On cgroup v1 the pod cgroups are made in each mounted subsystem with runc's fs manager's
// files, and removed with the pod; a subsystem the host lacks (hugetlb here) is skipped.
func TestPodCgroupOnHostV1(t *testing.T) {
	root := t.TempDir()
	for _, s := range []string{"cpu", "cpuacct", "memory", "pids"} {
		if err := os.Mkdir(filepath.Join(root, s), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config(func(c *v1beta1.OrchletConfiguration) {
		c.CgroupsPerQOS, c.CgroupRoot, c.CgroupDriver = true, "/", "cgroupfs"
		c.CPUCFSQuota, c.CPUCFSQuotaPeriod.Duration, c.PodPidsLimit = true, 100*time.Millisecond, 256
	})
	h := newHarness(t, nil, cfg, func(o *Options) { o.Node = Node{Cgroups: qos.CgroupV1{Root: root}, MemoryCapacity: 1 << 30} })
	guaranteed := newPod("g", withResources(ctr("a", "i"), rl("cpu", "500m", "memory", "256Mi"), rl("cpu", "500m", "memory", "256Mi")))
	besteffort := newPod("e", ctr("a", "i"))
	h.add(guaranteed, besteffort)
	h.runUntil(time.Second)
	read := func(dir string) map[string]string {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, e := range entries {
			if data, err := os.ReadFile(filepath.Join(root, dir, e.Name())); err == nil {
				got[e.Name()] = string(data)
			}
		}
		return got
	}
	for _, c := range []struct {
		dir   string
		files map[string]string
	}{
		{"cpu/orchpods/poduid-g", map[string]string{"cpu.shares": "512", "cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "50000"}},
		{"memory/orchpods/poduid-g", map[string]string{"memory.limit_in_bytes": "268435456"}},
		{"pids/orchpods/poduid-g", map[string]string{"pids.max": "256"}},
		{"cpuacct/orchpods/poduid-g", map[string]string{}},
		{"cpu/orchpods/besteffort/poduid-e", map[string]string{"cpu.shares": "2"}},
		{"memory/orchpods/besteffort/poduid-e", map[string]string{}},
		{"pids/orchpods/besteffort/poduid-e", map[string]string{"pids.max": "256"}},
		// The QoS cgroups: the minimum shares for BestEffort, and for Burstable without pods.
		{"cpu/orchpods/besteffort", map[string]string{"cpu.shares": "2"}},
		{"cpu/orchpods/burstable", map[string]string{"cpu.shares": "2"}},
	} {
		got := read(c.dir)
		for name := range got {
			if fi, _ := os.Stat(filepath.Join(root, c.dir, name)); fi != nil && fi.IsDir() {
				delete(got, name)
			}
		}
		if d := cmp.Diff(c.files, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", c.dir, d)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "hugetlb")); !os.IsNotExist(err) {
		t.Errorf("a hugetlb hierarchy was made where the host has none: %v", err)
	}
	h.remove(besteffort)
	h.runUntil(2 * time.Minute)
	for _, s := range []string{"cpu", "cpuacct", "memory", "pids"} {
		if _, err := os.Stat(filepath.Join(root, s, "orchpods/besteffort/poduid-e")); !os.IsNotExist(err) {
			t.Errorf("the pod cgroup outlived the pod in %s: %v", s, err)
		}
	}
}
