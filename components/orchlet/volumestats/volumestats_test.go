package volumestats

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a"), make([]byte, 10000), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "b"), make([]byte, 300), 0o644); err != nil {
		t.Fatal(err)
	}
	// A hard link is the same file: counted once.
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "sub", "a-again")); err != nil {
		t.Fatal(err)
	}
	u, err := ApparentUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Directories have no apparent size here; dir, sub, a and b are four inodes.
	if u.Bytes != 10300 || u.Inodes != 4 {
		t.Fatalf("ApparentUsage = %+v, want 10300 bytes, 4 inodes", u)
	}
	d, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Blocks: at least the data, in whole 512-byte units.
	if d.Bytes < 10300 || d.Bytes%512 != 0 || d.Inodes != 4 {
		t.Fatalf("DiskUsage = %+v, want at least 10300 bytes in blocks, 4 inodes", d)
	}
	if _, err := DiskUsage(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("a missing directory measured")
	}
}

func TestIsLocalEphemeralVolume(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  corev1.VolumeSource
		want bool
	}{
		{"emptyDir", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}, true},
		{"emptyDir in memory", corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}, false},
		{"configMap", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}, true},
		{"downwardAPI", corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{}}, true},
		{"gitRepo", corev1.VolumeSource{GitRepo: &corev1.GitRepoVolumeSource{}}, true},
		{"secret", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{}}, false},
		{"hostPath", corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{}}, false},
		{"projected", corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}, false},
	} {
		if got := IsLocalEphemeralVolume(&corev1.Volume{Name: "v", VolumeSource: tc.src}); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// fakePods are pods with their volumes under dir/<uid>/<name>.
type fakePods struct {
	dir  string
	pods []*corev1.Pod
}

func (f *fakePods) ActivePods() []*corev1.Pod { return f.pods }
func (f *fakePods) VolumeDir(pod *corev1.Pod, v *corev1.Volume) string {
	return filepath.Join(f.dir, string(pod.UID), v.Name)
}

func TestCalculatorPeriod(t *testing.T) {
	dir := t.TempDir()
	pod := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{
		{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}},
		{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}},
	}}}
	pod.UID = types.UID("u1")
	cache := filepath.Join(dir, "u1", "cache")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(n int) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(cache, "data"), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(1000)
	var measured []string
	measure := func(path string) (Usage, error) {
		measured = append(measured, path)
		return ApparentUsage(path)
	}
	for _, tc := range []struct {
		name   string
		period time.Duration
		// want are the cache volume's bytes seen at 0s, 30s and 60s; -1 for none reported.
		want [3]int64
	}{
		{"default period", time.Minute, [3]int64{1000, 1000, 5000}},
		{"shorter period", 30 * time.Second, [3]int64{1000, 5000, 5000}},
		{"zero disables", 0, [3]int64{-1, -1, -1}},
		{"negative disables", -time.Second, [3]int64{-1, -1, -1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			write(1000)
			measured = nil
			clk := clock.NewMock()
			c, err := New(Options{Clock: clk, Period: tc.period, Pods: &fakePods{dir: dir, pods: []*corev1.Pod{pod}}, Measure: measure})
			if err != nil {
				t.Fatal(err)
			}
			for i, at := range []time.Duration{0, 30 * time.Second, 60 * time.Second} {
				if i == 1 {
					write(5000) // after the first measurement
				}
				clk.Set(time.Unix(0, 0).Add(at))
				c.Step(t.Context())
				got := int64(-1)
				for _, v := range c.Volumes(pod.UID) {
					if v.Name == "cache" {
						got = int64(v.Bytes)
					} else {
						t.Fatalf("volume %s measured: only local ephemeral volumes are", v.Name)
					}
				}
				if got != tc.want[i] {
					t.Fatalf("at %v: cache holds %d bytes, want %d", at, got, tc.want[i])
				}
			}
			if _, ok := c.NextDeadline(); ok != (tc.period > 0) {
				t.Fatalf("NextDeadline set = %v with period %v", ok, tc.period)
			}
			if tc.period <= 0 && len(measured) > 0 {
				t.Fatalf("disabled, yet measured %v", measured)
			}
		})
	}
}

func TestCalculatorDropsGonePods(t *testing.T) {
	dir := t.TempDir()
	pod := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
	pod.UID = "u1"
	if err := os.MkdirAll(filepath.Join(dir, "u1", "cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	pods := &fakePods{dir: dir, pods: []*corev1.Pod{pod}}
	clk := clock.NewMock()
	c, err := New(Options{Clock: clk, Period: time.Minute, Pods: pods, Measure: ApparentUsage})
	if err != nil {
		t.Fatal(err)
	}
	c.Step(t.Context())
	if len(c.Volumes("u1")) != 1 {
		t.Fatal("not measured")
	}
	pods.pods = nil
	clk.Add(time.Minute)
	c.Step(t.Context())
	if len(c.Volumes("u1")) != 0 {
		t.Fatal("a gone pod's volumes still reported")
	}
	if _, err := New(Options{Clock: clk}); err == nil {
		t.Fatal("no error without Pods and Measure")
	}
}
