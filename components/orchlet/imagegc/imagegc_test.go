package imagegc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/events/eventstest"
	"orch.io/orch/components/orchlet/pods"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/fakecritest"
	"orch.io/orch/fakecri/script"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// harness is a collector on fakecri over gRPC, through the agent's CRI client, on a clock.Mock.
type harness struct {
	t    *testing.T
	ctx  context.Context
	mock *clock.Mock
	rt   *fakecri.Runtime
	rs   cri.RuntimeService
	is   cri.ImageManagerService
	m    *Manager
	rec  *eventstest.Recorder
}

// script: a 1000Mi image filesystem with base Mi used by others, and images of the given Mi sizes
// preloaded ("name:size"; a name ending in "!" is pinned).
func newHarness(t *testing.T, base int, images []string, sandbox string, p Policy) *harness {
	t.Helper()
	var rules, preload []string
	for _, img := range images {
		name, size, _ := strings.Cut(img, ":")
		pinned := strings.HasSuffix(name, "!")
		name = strings.TrimSuffix(name, "!")
		rules = append(rules, fmt.Sprintf("{match: %q, size: %sMi, pinned: %t}", name+":1", size, pinned))
		preload = append(preload, fmt.Sprintf("%q", name+":1"))
	}
	// The runtime's own sandbox image, pulled at the first sandbox, pinned: 1Mi.
	rules = append(rules, `{match: "registry.k8s.io/pause*", size: 1Mi}`)
	y := fmt.Sprintf("node: {imageFs: {mountpoint: /images, capacity: 1000Mi, used: %dMi}, preloadImages: [%s]}\nimages: [%s]\n",
		base, strings.Join(preload, ", "), strings.Join(rules, ", "))
	script, err := script.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	mock := clock.NewMock()
	mock.Set(t0)
	rt, sock := fakecritest.Start(t, fakecri.Options{Clock: mock, Seed: 1, Script: script})
	rs, is, err := pods.Connect(ctx, sock, "", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rec := &eventstest.Recorder{}
	m, err := New(Options{Clock: mock, Runtime: rs, Images: is, FsInfo: rt, Recorder: rec, NodeName: "node-a", SandboxImage: sandbox, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, ctx: ctx, mock: mock, rt: rt, rs: rs, is: is, m: m, rec: rec}
}

// run starts a container of image in a sandbox of its own and returns its id.
func (h *harness) run(image string) string {
	h.t.Helper()
	sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p-" + image, Namespace: "default", Uid: "uid-" + image}}
	sb, err := h.rs.RunPodSandbox(h.ctx, sbCfg, "")
	if err != nil {
		h.t.Fatal(err)
	}
	id, err := h.rs.CreateContainer(h.ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: image + ":1"}}, sbCfg)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.rs.StartContainer(h.ctx, id); err != nil {
		h.t.Fatal(err)
	}
	return id
}

// remove stops and removes a container, so its image is no longer in use.
func (h *harness) remove(id string) {
	h.t.Helper()
	if err := h.rs.StopContainer(h.ctx, id, 0); err != nil {
		h.t.Fatal(err)
	}
	if err := h.rs.RemoveContainer(h.ctx, id); err != nil {
		h.t.Fatal(err)
	}
}

// images lists the names of the images present, sorted.
func (h *harness) images() []string {
	h.t.Helper()
	imgs, err := h.is.ListImages(h.ctx, &runtimeapi.ImageFilter{})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	for _, img := range imgs {
		for _, tag := range img.RepoTags {
			if strings.HasPrefix(tag, "registry.k8s.io/pause") {
				continue
			}
			name := strings.TrimPrefix(tag, "docker.io/library/")
			out = append(out, strings.TrimSuffix(name, ":1"))
		}
	}
	slices.Sort(out)
	return out
}

// removed is the RemoveImage requests made, in order.
func (h *harness) removed() []string {
	var out []string
	for _, c := range h.rt.Calls(calllog.Filter{}) {
		if c.Method == "RemoveImage" {
			out = append(out, c.Request)
		}
	}
	return out
}

// advance moves the clock by d and runs whatever collection is due.
func (h *harness) advance(d time.Duration) {
	h.mock.Add(d)
	h.m.Step(h.ctx)
}

func TestThresholds(t *testing.T) {
	// Images a..d of 100Mi each on a 1000Mi filesystem; "base" Mi used by others.
	for _, tc := range []struct {
		name      string
		base      int
		policy    Policy
		inUse     []string
		wantLeft  []string
		wantEvent string
	}{
		{name: "below the high threshold nothing goes", base: 400, policy: Policy{HighThresholdPercent: 85, LowThresholdPercent: 80},
			wantLeft: []string{"a", "b", "c", "d"}},
		// 500+400 = 90% >= 85: free down to 50% = 400Mi, four images are all there is.
		{name: "over the high threshold down to the low one", base: 500, policy: Policy{HighThresholdPercent: 85, LowThresholdPercent: 50},
			wantLeft: []string{}},
		// 850+... usage 100 - (1000-850-400... base 450: 85% exactly: at the threshold counts; free to 70% = 150Mi: two images.
		{name: "at the high threshold, to the low one only", base: 450, policy: Policy{HighThresholdPercent: 85, LowThresholdPercent: 70},
			wantLeft: []string{"a", "c"}}, // equally unused: the id decides
		{name: "in-use images stay, the event says what was eligible", base: 500, policy: Policy{HighThresholdPercent: 85, LowThresholdPercent: 50},
			inUse: []string{"a", "c"}, wantLeft: []string{"a", "c"},
			wantEvent: "Warning FreeDiskSpaceFailed Node/node-a: Failed to garbage collect required amount of images. Attempted to free 420544512 bytes, but only found 209715200 bytes eligible to free."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.base, []string{"a:100", "b:100", "c:100", "d:100"}, "", tc.policy)
			for _, img := range tc.inUse {
				h.run(img)
			}
			h.m.Step(h.ctx)
			if got := h.images(); !slices.Equal(got, tc.wantLeft) && !(len(got) == 0 && len(tc.wantLeft) == 0) {
				t.Errorf("images left %v, want %v", got, tc.wantLeft)
			}
			ev := h.rec.Events()
			if tc.wantEvent == "" && len(ev) > 0 || tc.wantEvent != "" && !slices.Equal(ev, []string{tc.wantEvent}) {
				t.Errorf("events %q, want %q", ev, tc.wantEvent)
			}
		})
	}
}

func TestNeverPinnedSandboxOrInUse(t *testing.T) {
	h := newHarness(t, 590, []string{"pin!:100", "pause:100", "used:100", "free:100"}, "pause:1", Policy{HighThresholdPercent: 50, LowThresholdPercent: 0})
	h.run("used")
	h.m.Step(h.ctx)
	if got, want := h.images(), []string{"pause", "pin", "used"}; !slices.Equal(got, want) {
		t.Fatalf("images left %v, want %v", got, want)
	}
}

func TestExitedContainerKeepsItsImage(t *testing.T) {
	// The kubelet counts every container the runtime has, exited ones too, as using its image.
	h := newHarness(t, 600, []string{"a:100", "b:100"}, "", Policy{HighThresholdPercent: 50, LowThresholdPercent: 0})
	id := h.run("a")
	if err := h.rs.StopContainer(h.ctx, id, 0); err != nil {
		t.Fatal(err)
	}
	h.m.Step(h.ctx)
	if got, want := h.images(), []string{"a"}; !slices.Equal(got, want) {
		t.Fatalf("images left %v, want %v", got, want)
	}
}

func TestLeastRecentlyUsedFirst(t *testing.T) {
	// a is never used; b was used until 10m, c until 20m; d is in use. Freeing 150Mi takes a then b.
	h := newHarness(t, 450, []string{"a:100", "b:100", "c:100", "d:100"}, "", Policy{HighThresholdPercent: 99, LowThresholdPercent: 70})
	b, c := h.run("b"), h.run("c")
	h.run("d")
	h.m.Step(h.ctx) // 85% < 99%: records only
	h.advance(5 * time.Minute)
	h.remove(b)
	h.advance(5 * time.Minute) // b last used at 5m
	h.remove(c)
	h.advance(5 * time.Minute) // c last used at 10m
	h.m.o.Policy.HighThresholdPercent = 85
	h.advance(5 * time.Minute)
	if got := h.removed(); len(got) != 2 {
		t.Fatalf("removed %v, want two images", got)
	}
	if got, want := h.images(), []string{"c", "d"}; !slices.Equal(got, want) {
		t.Fatalf("images left %v, want %v: the least recently used go first", got, want)
	}
}

func TestMinimumAge(t *testing.T) {
	h := newHarness(t, 500, []string{"a:100", "b:100", "c:100", "d:100"}, "", Policy{HighThresholdPercent: 85, LowThresholdPercent: 50, MinAge: 2 * time.Minute})
	h.m.Step(h.ctx) // at 0: detected now, too young
	if got := h.images(); len(got) != 4 {
		t.Fatalf("an image younger than the minimum age was deleted: %v left", got)
	}
	want := []string{"Warning FreeDiskSpaceFailed Node/node-a: Failed to garbage collect required amount of images. Attempted to free 419430400 bytes, but only found 0 bytes eligible to free."}
	if got := h.rec.Events(); !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q (a first failure is only logged)", got, want)
	}
	h.mock.Add(time.Minute)
	h.m.Step(h.ctx)
	if len(h.rec.Events()) != 1 {
		t.Fatal("collected before the period")
	}
	h.advance(4 * time.Minute) // 5m: old enough
	if got := h.images(); len(got) != 0 {
		t.Fatalf("images left %v after the minimum age", got)
	}
	if got := h.rec.Events(); len(got) != 1 {
		t.Fatalf("events %q: a success adds none", got)
	}
}

func TestRepeatedFailureIsAnEvent(t *testing.T) {
	h := newHarness(t, 900, []string{"a:50"}, "", Policy{HighThresholdPercent: 85, LowThresholdPercent: 50})
	h.run("a")
	h.m.Step(h.ctx)
	h.advance(Period)
	got := h.rec.Events()
	if len(got) != 3 || !strings.HasPrefix(got[2], "Warning ImageGCFailed Node/node-a: Failed to garbage collect required amount of images.") {
		t.Fatalf("events %q: want FreeDiskSpaceFailed, then FreeDiskSpaceFailed and ImageGCFailed", got)
	}
}

func TestMaximumAge(t *testing.T) {
	// Usage 50% is far below the threshold: only the age rule deletes.
	h := newHarness(t, 200, []string{"old:100", "used:100", "recent:100"}, "", Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaxAge: 10 * time.Minute})
	recent := h.run("recent")
	h.run("used")
	h.m.Step(h.ctx)
	h.advance(Period) // 5m
	h.remove(recent)  // last used at 5m
	h.advance(Period) // 10m: not longer than MaxAge since the collector began
	if got := h.images(); len(got) != 3 {
		t.Fatalf("deleted before MaxAge had passed since start: %v left", got)
	}
	h.advance(Period) // 15m: old was never used; recent was used 10m ago, not more
	if got, want := h.images(), []string{"recent", "used"}; !slices.Equal(got, want) {
		t.Fatalf("images left %v, want %v", got, want)
	}
	h.advance(Period) // 20m: recent unused for 15m
	if got, want := h.images(), []string{"used"}; !slices.Equal(got, want) {
		t.Fatalf("images left %v, want %v", got, want)
	}
}

// At 100 without a maximum age nothing is collected periodically, but the node's images are still
// detected at start and every Period, as the kubelet's image manager does, so eviction's reclaim
// finds them as old as they are.
func TestDisabledAt100(t *testing.T) {
	h := newHarness(t, 900, []string{"a:100"}, "", Policy{HighThresholdPercent: 100, LowThresholdPercent: 80, MinAge: 2 * time.Minute})
	h.m.Step(h.ctx) // at start: detection only
	h.advance(Period)
	if len(h.images()) != 1 {
		t.Fatal("collected while disabled")
	}
	if next, ok := h.m.NextDeadline(); !ok || !next.Equal(h.mock.Now().Add(Period)) {
		t.Fatalf("next detection %v %v, want one Period on", next, ok)
	}
	freed, err := h.m.DeleteUnusedImages(h.ctx)
	if err != nil || freed != 100<<20 || len(h.images()) != 0 {
		t.Fatalf("DeleteUnusedImages freed %d, %v; left %v: the image was detected at start, 5m ago", freed, err, h.images())
	}
	h2 := newHarness(t, 900, []string{"a:100"}, "", Policy{HighThresholdPercent: 100, LowThresholdPercent: 80, MaxAge: time.Hour})
	h2.advance(2 * time.Hour)
	h2.advance(Period)
	if len(h2.images()) != 0 {
		t.Fatal("a maximum age keeps the periodic collection")
	}
}

func TestDeleteUnusedImages(t *testing.T) {
	h := newHarness(t, 0, []string{"a:100", "b:30", "c:100"}, "", Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: time.Minute})
	h.run("c")
	if freed, err := h.m.DeleteUnusedImages(h.ctx); err != nil || freed != 0 {
		t.Fatalf("freed %d, %v: images younger than the minimum age stay", freed, err)
	}
	h.mock.Add(time.Minute)
	freed, err := h.m.DeleteUnusedImages(h.ctx)
	if err != nil || freed != 130<<20 {
		t.Fatalf("freed %d, %v, want %d", freed, err, 130<<20)
	}
	if got, want := h.images(), []string{"c"}; !slices.Equal(got, want) {
		t.Fatalf("images left %v, want %v", got, want)
	}
}

func TestPolicyValidation(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		want string
	}{
		{Policy{HighThresholdPercent: 85, LowThresholdPercent: 80}, ""},
		{Policy{HighThresholdPercent: 101, LowThresholdPercent: 80}, "invalid HighThresholdPercent 101, must be in range [0-100]"},
		{Policy{HighThresholdPercent: 85, LowThresholdPercent: -1}, "invalid LowThresholdPercent -1, must be in range [0-100]"},
		{Policy{HighThresholdPercent: 50, LowThresholdPercent: 60}, "LowThresholdPercent 60 can not be higher than HighThresholdPercent 50"},
		{Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: -time.Second}, "invalid MinAge -1s, must not be negative"},
		{Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaxAge: -time.Second}, "invalid MaxAge -1s, must not be negative"},
	} {
		err := tc.p.Validate()
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || err.Error() != tc.want) {
			t.Errorf("%+v: got %v, want %q", tc.p, err, tc.want)
		}
	}
}

func TestFsInfoFailure(t *testing.T) {
	h := newHarness(t, 0, []string{"a:100"}, "", Policy{HighThresholdPercent: 85, LowThresholdPercent: 80})
	h.m.o.FsInfo = zeroFs{}
	err := h.m.GarbageCollect(h.ctx, t0)
	if err == nil || err.Error() != "invalid capacity 0 on image filesystem" {
		t.Fatalf("got %v", err)
	}
	if got := h.rec.Events(); len(got) != 1 || got[0] != "Warning InvalidDiskCapacity Node/node-a: invalid capacity 0 on image filesystem" {
		t.Fatalf("events %q", got)
	}
}

type zeroFs struct{}

func (zeroFs) FsInfo(string) (uint64, uint64, error) { return 0, 0, nil }

func TestStatfs(t *testing.T) {
	c, a, err := Statfs{}.FsInfo(t.TempDir())
	if err != nil || c == 0 || a > c {
		t.Fatalf("statfs: capacity %d available %d: %v", c, a, err)
	}
	if _, _, err := (Statfs{}).FsInfo("/no/such/dir"); err == nil {
		t.Fatal("statfs of a missing directory succeeded")
	}
}

func TestCollectedMetric(t *testing.T) {
	// Usage below the thresholds: old goes by age at 15m; then a threshold of 0 frees the rest by space.
	h := newHarness(t, 0, []string{"old:100", "new:100"}, "", Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaxAge: 10 * time.Minute})
	reg := prometheus.NewRegistry()
	if err := reg.Register(h.m.collected); err != nil {
		t.Fatal(err)
	}
	h.m.Step(h.ctx)
	h.advance(Period)
	h.advance(Period)
	h.advance(Period) // 15m: both unused since ever, both go by age
	want := "orchlet_image_garbage_collected_total{reason=\"age\"} 2\n"
	if got := metricLines(t, reg); got != want {
		t.Fatalf("metrics:\n%s\nwant:\n%s", got, want)
	}
	if _, err := New(Options{Clock: h.mock, Runtime: h.rs, Images: h.is, FsInfo: h.rt, Recorder: h.rec, NodeName: "n", Metrics: reg}); err == nil {
		t.Fatal("a second collector registered the same metric")
	}
}

func metricLines(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			fmt.Fprintf(&b, "%s{reason=%q} %v\n", mf.GetName(), m.GetLabel()[0].GetValue(), m.GetCounter().GetValue())
		}
	}
	return b.String()
}

func TestCollectedBySpace(t *testing.T) {
	h := newHarness(t, 500, []string{"a:100", "b:100", "c:100", "d:100"}, "", Policy{HighThresholdPercent: 85, LowThresholdPercent: 70})
	reg := prometheus.NewRegistry()
	if err := reg.Register(h.m.collected); err != nil {
		t.Fatal(err)
	}
	h.m.Step(h.ctx) // 90%: down to 70%, two images
	if got, want := metricLines(t, reg), "orchlet_image_garbage_collected_total{reason=\"space\"} 2\n"; got != want {
		t.Fatalf("metrics:\n%s\nwant:\n%s", got, want)
	}
}

// With ImageVolume, an image a container mounts as a volume is in use, as the kubelet's
// handleImageVolumes reads it from the container's status; without the gate it is not looked at.
func TestImageMountedAsVolumeIsInUse(t *testing.T) {
	for _, gate := range []bool{true, false} {
		h := newHarness(t, 590, []string{"app:100", "data:100", "free:100"}, "", Policy{HighThresholdPercent: 50, LowThresholdPercent: 0})
		h.m.o.ImageVolumes = gate
		st, err := h.is.ImageStatus(h.ctx, &runtimeapi.ImageSpec{Image: "data:1"}, false)
		if err != nil {
			t.Fatal(err)
		}
		sbCfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "uid-p"}}
		sb, err := h.rs.RunPodSandbox(h.ctx, sbCfg, "")
		if err != nil {
			t.Fatal(err)
		}
		cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: "app:1"},
			Mounts: []*runtimeapi.Mount{{ContainerPath: "/data", Image: &runtimeapi.ImageSpec{Image: st.GetImage().GetId(), UserSpecifiedImage: "data:1"}, Readonly: true}}}
		if _, err := h.rs.CreateContainer(h.ctx, sb, cfg, sbCfg); err != nil {
			t.Fatal(err)
		}
		h.m.Step(h.ctx)
		want := []string{"app", "data"}
		if !gate {
			want = []string{"app"}
		}
		if got := h.images(); !slices.Equal(got, want) {
			t.Fatalf("ImageVolume %v: images left %v, want %v", gate, got, want)
		}
	}
}
