package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// script observes the next of its stats on each call, repeating the last.
type script struct {
	stats []Stats
	err   error
	calls int
}

func (s *script) Observe(context.Context) (Stats, error) {
	if s.err != nil {
		return Stats{}, s.err
	}
	i := min(s.calls, len(s.stats)-1)
	s.calls++
	return s.stats[i], nil
}

type fakeWorld struct {
	pods    []*corev1.Pod
	log     []string
	cleaned map[types.UID]bool
}

func (w *fakeWorld) CleanedUp(uid types.UID) bool { return w.cleaned[uid] }

func (w *fakeWorld) ActivePods() []*corev1.Pod { return w.pods }
func (w *fakeWorld) Evict(uid types.UID, grace int64, reason, message string) {
	w.log = append(w.log, fmt.Sprintf("evict %s grace=%d %s", uid, grace, reason))
	w.pods = slices.DeleteFunc(w.pods, func(p *corev1.Pod) bool { return p.UID == uid })
}
func (w *fakeWorld) DeleteAllUnusedContainers(context.Context) error {
	w.log = append(w.log, "reclaim containers")
	return nil
}
func (w *fakeWorld) DeleteUnusedImages(context.Context) error {
	w.log = append(w.log, "reclaim images")
	return errors.New("image in use")
}
func (w *fakeWorld) Eventf(ref *corev1.ObjectReference, typ, reason, action, format string, args ...any) {
	w.log = append(w.log, fmt.Sprintf("event %s %s %s/%s: %s", typ, reason, ref.Kind, ref.Name, fmt.Sprintf(format, args...)))
}

func newTestManager(t *testing.T, cfg Config, obs Observer, w *fakeWorld) (*Manager, *clock.Mock) {
	t.Helper()
	clk := clock.NewMock()
	clk.Set(t0)
	m, err := NewManager(Options{Clock: clk, Config: cfg, Observer: obs, Reclaimer: w, Pods: w, Recorder: w, NodeName: "node-a"})
	if err != nil {
		t.Fatal(err)
	}
	return m, clk
}

func TestManagerReclaimsThenDecides(t *testing.T) {
	fs := func(availMi uint64) *FsStats {
		return &FsStats{AvailableBytes: availMi * mi, CapacityBytes: 1000 * mi, InodesFree: 10, Inodes: 10}
	}
	ts := mustThresholds(t, map[string]string{"nodefs.available": "10%"}, nil, nil, nil)
	// The threshold quantity is Kubernetes' too: 10% of 1000Mi as a float32 fraction.
	for _, tc := range []struct {
		name    string
		afterMi uint64
		want    []string
	}{
		{"reclaim clears the pressure", 500, []string{
			"event Warning EvictionThresholdMet Node/node-a: Attempting to reclaim ephemeral-storage",
			"reclaim containers", "reclaim images"}},
		{"reclaim does not", 50, []string{
			"event Warning EvictionThresholdMet Node/node-a: Attempting to reclaim ephemeral-storage",
			"reclaim containers", "reclaim images",
			"event Warning Evicted Pod/writer: The node was low on resource: ephemeral-storage. Threshold quantity: 104857601, available: 50Mi. Container app was using 40Mi, request is 0, has larger consumption of ephemeral-storage. ",
			"evict writer grace=1 Evicted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod("writer")
			w := &fakeWorld{pods: []*corev1.Pod{p}}
			obs := &script{stats: []Stats{
				{NodeFs: fs(50), Pods: []PodStats{usage(p, 0, 0, 40)}},
				{NodeFs: fs(tc.afterMi), Pods: []PodStats{usage(p, 0, 0, 40)}},
			}}
			m, _ := newTestManager(t, Config{Thresholds: ts, PressureTransitionPeriod: time.Minute}, obs, w)
			if !m.Step(context.Background()) {
				t.Fatal("the first round is due at once")
			}
			if !slices.Equal(w.log, tc.want) {
				t.Fatalf("log\n %s\nwant\n %s", strings.Join(w.log, "\n "), strings.Join(tc.want, "\n "))
			}
			if got := m.Conditions(); !slices.Equal(got, []corev1.NodeConditionType{corev1.NodeDiskPressure}) {
				t.Fatalf("conditions %v", got)
			}
			want := 0.0
			if len(tc.want) > 3 {
				want = 1
			}
			var got dto.Metric
			if err := m.evictions.WithLabelValues("nodefs.available").Write(&got); err != nil || got.GetCounter().GetValue() != want {
				t.Fatalf("orchlet_evictions{eviction_signal=nodefs.available} = %v (%v), want %v", got.GetCounter().GetValue(), err, want)
			}
		})
	}
}

func TestManagerRoundsEveryTenSeconds(t *testing.T) {
	w := &fakeWorld{}
	obs := &script{stats: []Stats{memNode(500)}}
	m, clk := newTestManager(t, Config{Thresholds: mustThresholds(t, map[string]string{"memory.available": "100Mi"}, nil, nil, nil)}, obs, w)
	ctx := context.Background()
	m.Step(ctx)
	if m.Idle() != true || m.Step(ctx) {
		t.Fatal("a second round at the same instant")
	}
	next, _ := m.NextDeadline()
	if next != t0.Add(MonitoringInterval) {
		t.Fatalf("next round at %v, want 10s after the first", next.Sub(t0))
	}
	clk.Add(MonitoringInterval)
	if !m.Step(ctx) || obs.calls != 2 {
		t.Fatalf("rounds observed %d times, want 2", obs.calls)
	}
}

func TestManagerWithoutObservationDecidesNothing(t *testing.T) {
	p := pod("app")
	w := &fakeWorld{pods: []*corev1.Pod{p}}
	m, _ := newTestManager(t, Config{Thresholds: mustThresholds(t, map[string]string{"memory.available": "100Mi"}, nil, nil, nil)}, &script{err: errors.New("no stats")}, w)
	m.Step(context.Background())
	if len(w.log) != 0 || len(m.Conditions()) != 0 {
		t.Fatalf("log %v conditions %v", w.log, m.Conditions())
	}
}

func TestManagerAdmitFollowsConditions(t *testing.T) {
	w := &fakeWorld{}
	m, _ := newTestManager(t, Config{Thresholds: mustThresholds(t, map[string]string{"memory.available": "100Mi"}, nil, nil, nil), PressureTransitionPeriod: time.Minute}, &script{stats: []Stats{memNode(50)}}, w)
	if ok, _, _ := m.Admit(pod("be")); !ok {
		t.Fatal("refused before any pressure")
	}
	m.Step(context.Background())
	if ok, reason, msg := m.Admit(pod("be")); ok || reason != "Evicted" || msg != "The node had condition: [MemoryPressure]. " {
		t.Fatalf("Admit under memory pressure = %v %q %q", ok, reason, msg)
	}
}

// After an eviction the next round waits, looking every second, until the evicted pod is cleaned
// up, then runs at once; a pod never cleaned up is waited for 30s.
func TestManagerWaitsForCleanup(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cleanedAt time.Duration // 0: never
		nextRound time.Duration
	}{
		{"cleaned up after 3s", 3 * time.Second, 3 * time.Second},
		{"never cleaned up", 0, 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := pod("a"), pod("b")
			w := &fakeWorld{pods: []*corev1.Pod{a, b}, cleaned: map[types.UID]bool{}}
			obs := &script{stats: []Stats{memNode(50, usage(a, 300, 1, 0), usage(b, 100, 1, 0))}}
			m, clk := newTestManager(t, Config{Thresholds: mustThresholds(t, map[string]string{"memory.available": "100Mi"}, nil, nil, nil)}, obs, w)
			ctx := context.Background()
			m.Step(ctx)
			if obs.calls != 1 || len(w.log) == 0 || !strings.HasPrefix(w.log[len(w.log)-1], "evict a ") {
				t.Fatalf("first round: %v", w.log)
			}
			for elapsed := time.Second; elapsed <= 40*time.Second; elapsed += time.Second {
				clk.Add(time.Second)
				if tc.cleanedAt != 0 && elapsed == tc.cleanedAt {
					w.cleaned[a.UID] = true
				}
				m.Step(ctx)
				if obs.calls == 2 {
					if elapsed != tc.nextRound {
						t.Fatalf("next round %v after the eviction, want %v", elapsed, tc.nextRound)
					}
					return
				}
			}
			t.Fatalf("no round within 40s of the eviction")
		})
	}
}
