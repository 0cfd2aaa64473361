package qos

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

// The kubelet's cleanupOrphanedPodCgroups, after the grace: a known pod's cgroup stays, an unknown
// one is destroyed, or reduced while its pod's volumes are mounted.
func TestJudgeOrphans(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	live := PodCgroup{UID: "live", Path: "/orchpods/burstable/podlive"}
	stale := PodCgroup{UID: "stale", Path: "/orchpods/besteffort/podstale"}
	staleG := PodCgroup{UID: "staleg", Path: "/orchpods/podstaleg"}
	mounted := PodCgroup{UID: "mounted", Path: "/orchpods/podmounted"}
	// A pod's cgroup left in one QoS class while the pod runs in another is the pod's all the same.
	moved := PodCgroup{UID: "live", Path: "/orchpods/besteffort/podlive"}
	long := t0.Add(-OrphanGrace)
	for _, c := range []struct {
		name          string
		in            OrphanInput
		destroy, keep []PodCgroup
		since         map[string]time.Time
	}{
		{
			name: "nothing present",
			in:   OrphanInput{Known: map[types.UID]bool{"live": true}},
		},
		{
			name:  "first found unknown: the grace starts",
			in:    OrphanInput{Present: []PodCgroup{live, stale}, Known: map[types.UID]bool{"live": true}},
			since: map[string]time.Time{stale.Path: t0},
		},
		{
			name:  "unknown a second short of the grace",
			in:    OrphanInput{Present: []PodCgroup{stale}, UnknownSince: map[string]time.Time{stale.Path: t0.Add(-OrphanGrace + time.Second)}},
			since: map[string]time.Time{stale.Path: t0.Add(-OrphanGrace + time.Second)},
		},
		{
			name: "unknown for the grace: destroyed, in path order",
			in: OrphanInput{Present: []PodCgroup{stale, live, staleG}, Known: map[types.UID]bool{"live": true},
				UnknownSince: map[string]time.Time{stale.Path: long, staleG.Path: long}},
			destroy: []PodCgroup{stale, staleG},
			since:   map[string]time.Time{stale.Path: long, staleG.Path: long},
		},
		{
			name: "volumes still mounted: reduced, not destroyed",
			in: OrphanInput{Present: []PodCgroup{mounted, stale}, VolumesLeft: map[types.UID]bool{"mounted": true},
				UnknownSince: map[string]time.Time{stale.Path: long, mounted.Path: long}},
			destroy: []PodCgroup{stale},
			keep:    []PodCgroup{mounted},
			since:   map[string]time.Time{stale.Path: long, mounted.Path: long},
		},
		{
			name: "known again: the grace is forgotten",
			in: OrphanInput{Present: []PodCgroup{live, moved}, Known: map[types.UID]bool{"live": true},
				UnknownSince: map[string]time.Time{live.Path: long, "/orchpods/podgone": long}},
		},
		{
			// A clock set back does not leave a cgroup judged before it was seen.
			name:  "unknown since a time after now",
			in:    OrphanInput{Present: []PodCgroup{stale}, UnknownSince: map[string]time.Time{stale.Path: t0.Add(time.Hour)}},
			since: map[string]time.Time{stale.Path: t0},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.in.Now = t0
			got := JudgeOrphans(c.in)
			if d := cmp.Diff(c.destroy, got.Destroy, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("destroy (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.keep, got.Reduce, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("reduce (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.since, got.UnknownSince, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("unknown since (-want +got):\n%s", d)
			}
		})
	}
}

// The pod cgroups are found under orchpods and its two QoS cgroups in any hierarchy, by the name
// each driver gives them; a cgroup of another name, or deeper, is no pod's.
func TestPodCgroupsFound(t *testing.T) {
	for _, c := range []struct {
		name   string
		driver string
		v2     bool
		dirs   []string
		want   []PodCgroup
	}{
		{
			name: "cgroupfs on v1", driver: "cgroupfs",
			dirs: []string{"cpu/orchpods/poda", "memory/orchpods/burstable/podb-1", "pids/orchpods/besteffort/podc",
				"cpuset/orchpods/besteffort/podc/ctr", "cpu/orchpods/other", "cpu/orchpods/burstable/pod", "cpu/kubepods/podx"},
			want: []PodCgroup{{"a", "/orchpods/poda"}, {"b-1", "/orchpods/burstable/podb-1"}, {"c", "/orchpods/besteffort/podc"}},
		},
		{
			name: "systemd on v2", driver: "systemd", v2: true,
			dirs: []string{"orchpods.slice/orchpods-poda_1.slice", "orchpods.slice/orchpods-burstable.slice/orchpods-burstable-podb.slice",
				"orchpods.slice/orchpods-besteffort.slice/orchpods-besteffort-podc_2_3.slice/cri.scope",
				"orchpods.slice/orchpods-besteffort.slice/orchpods-besteffort-podd-e.slice", "orchpods.slice/orchpods-podf"},
			want: []PodCgroup{{"a-1", "/orchpods.slice/orchpods-poda_1.slice"}, {"b", "/orchpods.slice/orchpods-burstable.slice/orchpods-burstable-podb.slice"},
				{"c-2-3", "/orchpods.slice/orchpods-besteffort.slice/orchpods-besteffort-podc_2_3.slice"}},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			for _, d := range c.dirs {
				if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			var h PodCgroups = CgroupV1{Root: root}
			if c.v2 {
				h = CgroupV2{Root: root}
			}
			m, err := New(config(func(cfg *v1beta1.OrchletConfiguration) { cfg.CgroupsPerQOS, cfg.CgroupDriver = true, c.driver }), Host{Cgroups: h})
			if err != nil {
				t.Fatal(err)
			}
			got, err := m.PodCgroups()
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

// Destroy kills the processes of the cgroup's tree, each once, and removes the tree in every
// hierarchy (cpuset's container cgroups included, which the agent never made); Reduce leaves the
// minimum shares.
func TestDestroyAndReduce(t *testing.T) {
	root := t.TempDir()
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sleeper.Wait() }()
	t.Cleanup(func() { _ = sleeper.Process.Kill() })
	pid := strconv.Itoa(sleeper.Process.Pid)
	files := map[string]string{
		"cpu/orchpods/burstable/poda/cpu.shares":               "512",
		"cpu/orchpods/burstable/poda/ctr/cgroup.procs":         pid + "\n",
		"cpuset/orchpods/burstable/poda/ctr/cgroup.procs":      pid + "\n",
		"memory/orchpods/burstable/poda/cgroup.procs":          "",
		"memory/orchpods/burstable/podb/memory.limit_in_bytes": "1",
	}
	for name, data := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, err := New(config(func(c *v1beta1.OrchletConfiguration) { c.CgroupsPerQOS = true }), Host{Cgroups: CgroupV1{Root: root}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.DestroyPodCgroup(PodCgroup{UID: "a", Path: "/orchpods/burstable/poda"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the pod cgroup's process was not killed")
	}
	for _, s := range []string{"cpu", "cpuset", "memory"} {
		if _, err := os.Stat(filepath.Join(root, s, "orchpods/burstable/poda")); !os.IsNotExist(err) {
			t.Errorf("%s: the pod cgroup is left: %v", s, err)
		}
	}
	got, err := m.PodCgroups()
	if err != nil {
		t.Fatal(err)
	}
	if want := []PodCgroup{{"b", "/orchpods/burstable/podb"}}; !slices.Equal(got, want) {
		t.Errorf("pod cgroups left %v, want %v", got, want)
	}
	if err := m.DestroyPodCgroup(PodCgroup{UID: "a", Path: "/orchpods/burstable/poda"}); err != nil {
		t.Errorf("destroying a cgroup already gone: %v", err)
	}
	if err := m.ReducePodCgroup(got[0]); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(root, "cpu/orchpods/burstable/podb/cpu.shares")); string(data) != "2" {
		t.Errorf("reduced cpu.shares %q, want 2", data)
	}
}
