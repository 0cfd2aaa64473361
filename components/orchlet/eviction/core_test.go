package eviction

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/orchlet/sources"
)

const mi = 1 << 20

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// pod is an API pod named name; opts shape it.
func pod(name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name),
			Annotations: map[string]string{sources.ConfigSourceAnnotation: sources.SourceAPI}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func requests(res corev1.ResourceName, q string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{res: resource.MustParse(q)}
	}
}

func limits(res corev1.ResourceName, q string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{res: resource.MustParse(q)}
	}
}

func prio(v int32) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Spec.Priority = &v } }

func grace(s int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &s }
}

func static(p *corev1.Pod) { p.Annotations[sources.ConfigSourceAnnotation] = sources.SourceFile }

// usage is a pod's stats: memory in MiB for its one container, processes, rootfs MiB.
func usage(p *corev1.Pod, memMi, procs, diskMi uint64) PodStats {
	return PodStats{UID: p.UID, MemoryWorkingSetBytes: memMi * mi, Processes: procs,
		Containers: []ContainerStats{{Name: "app", MemoryWorkingSetBytes: memMi * mi, RootfsBytes: diskMi * mi}}}
}

func memNode(availMi uint64, pods ...PodStats) Stats {
	return Stats{Memory: &MemoryStats{AvailableBytes: availMi * mi, WorkingSetBytes: (1000 - availMi) * mi}, Pods: pods}
}

func mustThresholds(t *testing.T, hard, soft, graces, reclaim map[string]string) []Threshold {
	t.Helper()
	ts, err := ParseThresholdConfig(nil, hard, soft, graces, reclaim)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func names(evs []Eviction) string {
	var s []string
	for _, e := range evs {
		s = append(s, fmt.Sprintf("%s/%ds", e.Pod.Name, e.GracePeriodSeconds))
	}
	return strings.Join(s, ",")
}

func TestHardMemoryEviction(t *testing.T) {
	c := NewCore(Config{Thresholds: mustThresholds(t, map[string]string{"memory.available": "100Mi"}, nil, nil, nil), PressureTransitionPeriod: 5 * time.Minute})
	be, burst := pod("best-effort"), pod("burstable", requests(corev1.ResourceMemory, "100Mi"), grace(30))
	pods := []*corev1.Pod{burst, be}

	r := c.Synchronize(t0, memNode(200, usage(be, 50, 1, 0), usage(burst, 300, 1, 0)), pods)
	if len(r.Conditions) != 0 || len(r.Evictions) != 0 {
		t.Fatalf("above the threshold: %+v", r)
	}
	r = c.Synchronize(t0.Add(10*time.Second), memNode(90, usage(be, 50, 1, 0), usage(burst, 300, 1, 0)), pods)
	if !slices.Equal(r.Conditions, []corev1.NodeConditionType{corev1.NodeMemoryPressure}) {
		t.Fatalf("conditions = %v", r.Conditions)
	}
	if r.Reclaiming != corev1.ResourceMemory || r.Reclaim != (Reclaim{}) {
		t.Fatalf("reclaiming %q with %+v; memory has no node-level reclaim", r.Reclaiming, r.Reclaim)
	}
	// Both exceed their requests; burstable's usage above its request (200Mi) is the larger.
	if got := names(r.Evictions); got != "burstable/1s" {
		t.Fatalf("evicted %s, want burstable with the hard threshold's 1s grace", got)
	}
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 90Mi. Container app was using 300Mi, request is 100Mi, has larger consumption of memory. "
	if r.Evictions[0].Message != want {
		t.Fatalf("message\n got %q\nwant %q", r.Evictions[0].Message, want)
	}
}

func TestRankMemoryPressure(t *testing.T) {
	pods := []*corev1.Pod{
		pod("guaranteed-within", requests(corev1.ResourceMemory, "200Mi"), limits(corev1.ResourceMemory, "200Mi")),
		pod("burstable-over-low", requests(corev1.ResourceMemory, "100Mi")),
		pod("best-effort-small"),
		pod("best-effort-high-prio", prio(1000)),
		pod("burstable-over-high", requests(corev1.ResourceMemory, "100Mi")),
		pod("no-stats", prio(5000)),
	}
	stats := map[string]*PodStats{}
	for name, mem := range map[string]uint64{"guaranteed-within": 150, "burstable-over-low": 120, "best-effort-small": 10, "best-effort-high-prio": 500, "burstable-over-high": 400} {
		s := usage(pod(name), mem, 0, 0)
		stats[name] = &s
	}
	var cands []*candidate
	for _, p := range pods {
		cands = append(cands, &candidate{pod: p, stats: stats[p.Name]})
	}
	rankMemoryPressure(cands)
	var got []string
	for _, c := range cands {
		got = append(got, c.pod.Name)
	}
	// Pods without stats first, then over requests (by priority, then usage above requests), then
	// within requests.
	want := []string{"no-stats", "burstable-over-high", "burstable-over-low", "best-effort-small", "best-effort-high-prio", "guaranteed-within"}
	if !slices.Equal(got, want) {
		t.Fatalf("rank = %v\nwant   %v", got, want)
	}
}

func TestRankPIDPressure(t *testing.T) {
	a, b, c := pod("few"), pod("many"), pod("many-high", prio(10))
	stats := Stats{Pids: &PidStats{MaxPID: 1000, Running: 990}, Pods: []PodStats{usage(a, 0, 5, 0), usage(b, 0, 50, 0), usage(c, 0, 500, 0)}}
	core := NewCore(Config{Thresholds: mustThresholds(t, map[string]string{"pid.available": "20"}, nil, nil, nil), PressureTransitionPeriod: time.Minute})
	r := core.Synchronize(t0, stats, []*corev1.Pod{a, b, c})
	if got := names(r.Evictions); got != "many/1s" || !slices.Equal(r.Conditions, []corev1.NodeConditionType{corev1.NodePIDPressure}) {
		t.Fatalf("evicted %s with %v; want many (lowest priority, most processes) under PIDPressure", got, r.Conditions)
	}
}

func TestSoftThresholdGracePeriod(t *testing.T) {
	c := NewCore(Config{
		Thresholds:               mustThresholds(t, map[string]string{}, map[string]string{"memory.available": "300Mi"}, map[string]string{"memory.available": "1m"}, nil),
		PressureTransitionPeriod: 5 * time.Minute, MaxPodGracePeriodSeconds: 20,
	})
	p := pod("app", grace(60))
	low, high := memNode(200, usage(p, 500, 1, 0)), memNode(400, usage(p, 500, 1, 0))
	pods := []*corev1.Pod{p}
	for _, step := range []struct {
		at    time.Duration
		stats Stats
		want  string
	}{
		{0, low, ""},
		{50 * time.Second, low, ""},
		{55 * time.Second, high, ""}, // cleared before its grace period: the clock starts again
		{60 * time.Second, low, ""},
		{110 * time.Second, low, ""},
		{120 * time.Second, low, "app/20s"}, // held 1m: evicted with min(max-pod-grace 20, pod's 60)
	} {
		r := c.Synchronize(t0.Add(step.at), step.stats, pods)
		if got := names(r.Evictions); got != step.want {
			t.Fatalf("at %v evicted %q, want %q", step.at, got, step.want)
		}
		if !slices.Equal(r.Conditions, []corev1.NodeConditionType{corev1.NodeMemoryPressure}) {
			t.Fatalf("at %v conditions = %v: a soft threshold met sets the condition before its grace period ends", step.at, r.Conditions)
		}
	}
	// The pod's own grace period when it is the smaller.
	c2 := NewCore(Config{Thresholds: c.cfg.Thresholds, MaxPodGracePeriodSeconds: 90})
	p2 := pod("short", grace(5))
	c2.Synchronize(t0, memNode(200, usage(p2, 500, 1, 0)), []*corev1.Pod{p2})
	if r := c2.Synchronize(t0.Add(time.Minute), memNode(200, usage(p2, 500, 1, 0)), []*corev1.Pod{p2}); names(r.Evictions) != "short/5s" {
		t.Fatalf("evicted %s, want short/5s", names(r.Evictions))
	}
}

func TestPressureTransitionPeriod(t *testing.T) {
	c := NewCore(Config{Thresholds: mustThresholds(t, map[string]string{"memory.available": "100Mi"}, nil, nil, nil), PressureTransitionPeriod: 30 * time.Second})
	for _, step := range []struct {
		at    time.Duration
		avail uint64
		want  bool
	}{
		{0, 50, true}, {10 * time.Second, 500, true}, {20 * time.Second, 50, true}, // flap: stays set
		{30 * time.Second, 500, true}, {49 * time.Second, 500, true}, {50 * time.Second, 500, false},
	} {
		r := c.Synchronize(t0.Add(step.at), memNode(step.avail), nil)
		if got := len(r.Conditions) == 1; got != step.want {
			t.Fatalf("at %v MemoryPressure = %v, want %v", step.at, got, step.want)
		}
	}
}

func TestMinimumReclaim(t *testing.T) {
	c := NewCore(Config{Thresholds: mustThresholds(t, map[string]string{"memory.available": "100Mi"}, nil, nil, map[string]string{"memory.available": "200Mi"}), PressureTransitionPeriod: time.Minute})
	p := pod("app")
	pods := []*corev1.Pod{p}
	if r := c.Synchronize(t0, memNode(150, usage(p, 10, 1, 0)), pods); len(r.Evictions) != 0 {
		t.Fatal("not met yet: 150Mi available > 100Mi")
	}
	if r := c.Synchronize(t0.Add(10*time.Second), memNode(90, usage(p, 10, 1, 0)), pods); len(r.Evictions) != 1 {
		t.Fatal("met: evict")
	}
	// Above the threshold, below threshold + minimum reclaim (300Mi): still met.
	if r := c.Synchronize(t0.Add(20*time.Second), memNode(250, usage(p, 10, 1, 0)), pods); len(r.Evictions) != 1 {
		t.Fatal("250Mi < 100Mi + 200Mi minimum reclaim: still evicting")
	}
	if r := c.Synchronize(t0.Add(30*time.Second), memNode(350, usage(p, 10, 1, 0)), pods); len(r.Evictions) != 0 || len(r.Met) != 0 {
		t.Fatalf("350Mi >= 300Mi: reclaimed, got %+v", r)
	}
}

func TestDiskPressureReclaimsFirst(t *testing.T) {
	fs := func(availMi uint64) *FsStats {
		return &FsStats{AvailableBytes: availMi * mi, CapacityBytes: 1000 * mi, InodesFree: 1000, Inodes: 1000}
	}
	p := pod("writer", grace(30))
	pods := []*corev1.Pod{p}
	ts := mustThresholds(t, map[string]string{"nodefs.available": "10%"}, nil, nil, map[string]string{"nodefs.available": "50Mi"})
	for _, tc := range []struct {
		name       string
		afterMi    uint64
		wantEvict  string
		wantReclam Reclaim
	}{
		{"reclaim is enough", 160, "", Reclaim{Containers: true, Images: true}},
		{"reclaim is not past minimum reclaim", 140, "writer/1s", Reclaim{Containers: true, Images: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewCore(Config{Thresholds: ts, PressureTransitionPeriod: time.Minute})
			r := c.Synchronize(t0, Stats{NodeFs: fs(50), Pods: []PodStats{usage(p, 0, 0, 40)}}, pods)
			if r.Reclaim != tc.wantReclam || len(r.Evictions) != 0 || r.Reclaiming != corev1.ResourceEphemeralStorage {
				t.Fatalf("round = %+v: node-level reclaim comes before any eviction", r)
			}
			if !slices.Equal(r.Conditions, []corev1.NodeConditionType{corev1.NodeDiskPressure}) {
				t.Fatalf("conditions = %v", r.Conditions)
			}
			evs := c.AfterReclaim(Stats{NodeFs: fs(tc.afterMi), Pods: []PodStats{usage(p, 0, 0, 40)}})
			if got := names(evs); got != tc.wantEvict {
				t.Fatalf("after reclaim evicted %q, want %q", got, tc.wantEvict)
			}
		})
	}
	// With a separate imagefs, nodefs pressure has no node-level reclaim and ranks by logs and
	// volumes; imagefs pressure reclaims containers and images.
	l := layoutOf(Stats{NodeFs: fs(10), ImageFs: fs(500)})
	if l.reclaimFor(SignalNodeFsAvailable) != (Reclaim{}) || l.reclaimFor(SignalImageFsAvailable) != (Reclaim{Containers: true, Images: true}) {
		t.Fatal("separate imagefs: reclaim functions as buildSignalToNodeReclaimFuncs")
	}
	split := layoutOf(Stats{NodeFs: fs(10), ImageFs: fs(500), ContainerFs: fs(300)})
	if split.reclaimFor(SignalContainerFsAvailable) != (Reclaim{Containers: true}) || split.reclaimFor(SignalImageFsAvailable) != (Reclaim{Images: true}) {
		t.Fatal("split containerfs: containers on their own, images on their own")
	}
}

func TestCriticalPodsNotEvicted(t *testing.T) {
	c := NewCore(Config{Thresholds: mustThresholds(t, map[string]string{"memory.available": "100Mi"}, nil, nil, nil), PressureTransitionPeriod: time.Minute})
	crit, st, normal := pod("critical", prio(SystemCriticalPriority)), pod("static", static), pod("normal", requests(corev1.ResourceMemory, "1Gi"))
	pods := []*corev1.Pod{crit, st, normal}
	r := c.Synchronize(t0, memNode(50, usage(crit, 900, 1, 0), usage(st, 800, 1, 0), usage(normal, 10, 1, 0)), pods)
	if got := names(r.Evictions); got != "normal/1s" {
		t.Fatalf("evicted %s; critical and static pods are skipped", got)
	}
	r = c.Synchronize(t0.Add(10*time.Second), memNode(50, usage(crit, 900, 1, 0), usage(st, 800, 1, 0)), []*corev1.Pod{crit, st})
	if len(r.Evictions) != 0 {
		t.Fatalf("evicted %s; only critical pods left", names(r.Evictions))
	}
}

func TestAdmit(t *testing.T) {
	memPressure := NewCore(Config{Thresholds: mustThresholds(t, map[string]string{"memory.available": "100Mi"}, nil, nil, nil), PressureTransitionPeriod: time.Minute})
	memPressure.Synchronize(t0, memNode(50), nil)
	both := NewCore(Config{Thresholds: mustThresholds(t, map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"}, nil, nil, nil), PressureTransitionPeriod: time.Minute})
	both.Synchronize(t0, Stats{Memory: memNode(50).Memory, NodeFs: &FsStats{AvailableBytes: 1, CapacityBytes: 100, InodesFree: 10, Inodes: 10}}, nil)
	none := NewCore(Config{})
	tolerates := func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: TaintMemoryPressure, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	}
	for _, tc := range []struct {
		name string
		core *Core
		pod  *corev1.Pod
		want string
	}{
		{"no pressure", none, pod("be"), ""},
		{"best effort under memory pressure", memPressure, pod("be"), "The node had condition: [MemoryPressure]. "},
		{"burstable under memory pressure", memPressure, pod("b", requests(corev1.ResourceMemory, "1Mi")), ""},
		{"best effort tolerating memory pressure", memPressure, pod("be", tolerates), ""},
		{"critical best effort", memPressure, pod("be", static), ""},
		{"any pod under disk pressure", both, pod("b", requests(corev1.ResourceMemory, "1Mi")), "The node had condition: [MemoryPressure DiskPressure]. "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, reason, msg := tc.core.Admit(tc.pod)
			if ok != (tc.want == "") || msg != tc.want || (!ok && reason != "Evicted") {
				t.Fatalf("Admit = %v %q %q, want message %q", ok, reason, msg, tc.want)
			}
		})
	}
}

func TestLocalStorageEviction(t *testing.T) {
	c := NewCore(Config{LocalStorageCapacityIsolation: true})
	ctrLimit := pod("ctr-limit", limits(corev1.ResourceEphemeralStorage, "100Mi"))
	sized := pod("emptydir", func(p *corev1.Pod) {
		l := resource.MustParse("10Mi")
		p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &l}}}}
	})
	within := pod("within", limits(corev1.ResourceEphemeralStorage, "1Gi"))
	sizedStats := usage(sized, 0, 0, 1)
	sizedStats.Volumes = []VolumeStats{{Name: "scratch", UsedBytes: 11 * mi}}
	r := c.Synchronize(t0, Stats{Pods: []PodStats{usage(ctrLimit, 0, 0, 150), sizedStats, usage(within, 0, 0, 150)}}, []*corev1.Pod{ctrLimit, sized, within})
	if got := names(r.Evictions); got != "ctr-limit/0s,emptydir/0s" {
		t.Fatalf("evicted %s", got)
	}
	if r.Evictions[0].Message != "Pod ephemeral local storage usage exceeds the total limit of containers 100Mi. " ||
		r.Evictions[1].Message != `Usage of EmptyDir volume "scratch" exceeds the limit "10Mi". ` {
		t.Fatalf("messages %q, %q", r.Evictions[0].Message, r.Evictions[1].Message)
	}
	off := NewCore(Config{})
	if r := off.Synchronize(t0, Stats{Pods: []PodStats{usage(ctrLimit, 0, 0, 150)}}, []*corev1.Pod{ctrLimit}); len(r.Evictions) != 0 {
		t.Fatal("without local storage capacity isolation no pod is evicted for its limits")
	}
}

// A negative --eviction-max-pod-grace-period makes a soft eviction immediate: the grace passed on
// is negative and the pod workers kill at once.
func TestNegativeMaxPodGracePeriod(t *testing.T) {
	ts := mustThresholds(t, map[string]string{}, map[string]string{"memory.available": "300Mi"}, map[string]string{"memory.available": "0s"}, nil)
	// A grace period of 0s is hard, as isHardEvictionThreshold says.
	if !ts[0].Hard() {
		t.Fatal("a soft threshold with a 0s grace period is hard")
	}
	ts = mustThresholds(t, map[string]string{}, map[string]string{"memory.available": "300Mi"}, map[string]string{"memory.available": "10s"}, nil)
	c := NewCore(Config{Thresholds: ts, MaxPodGracePeriodSeconds: -1})
	p := pod("app", grace(30))
	c.Synchronize(t0, memNode(200, usage(p, 500, 1, 0)), []*corev1.Pod{p})
	r := c.Synchronize(t0.Add(10*time.Second), memNode(200, usage(p, 500, 1, 0)), []*corev1.Pod{p})
	if len(r.Evictions) != 1 || r.Evictions[0].GracePeriodSeconds >= 0 {
		t.Fatalf("evictions %s, want app with a negative grace", names(r.Evictions))
	}
}
