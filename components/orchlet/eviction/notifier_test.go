package eviction

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// fakeFactory records each threshold armed and lets the test cross it.
type fakeFactory struct {
	armed []*fakeNotifier
	err   error
}

type fakeNotifier struct {
	desc    string
	ch      chan<- struct{}
	stopped bool
}

func (f *fakeFactory) NewCgroupNotifier(path, attribute string, threshold int64) (CgroupNotifier, error) {
	if f.err != nil {
		return nil, f.err
	}
	n := &fakeNotifier{desc: fmt.Sprintf("%s/%s>=%dMi", path, attribute, threshold/int64(mi))}
	f.armed = append(f.armed, n)
	return n, nil
}

func (n *fakeNotifier) Start(ch chan<- struct{}) { n.ch = ch }
func (n *fakeNotifier) Stop()                    { n.stopped = true }

// cross is the kernel's notification: without waiting, as the real notifier sends.
func (n *fakeNotifier) cross() {
	select {
	case n.ch <- struct{}{}:
	default:
	}
}

// With --kernel-memcg-notification each memory threshold is armed on its cgroup's usage at
// capacity - threshold + inactive_file, again every 10s from a fresh observation, and a crossing
// makes a round due at once instead of at the next 10s tick.
func TestMemcgNotificationsArmAndWake(t *testing.T) {
	ts := mustThresholds(t, map[string]string{"memory.available": "100Mi", "allocatableMemory.available": "80Mi"}, nil, nil, nil)
	// 1000Mi of memory, 500Mi working set, 600Mi usage: 100Mi inactive file pages. The pods
	// have 800Mi allocatable, 300Mi working set, 320Mi usage.
	obs := &script{stats: []Stats{
		{Memory: &MemoryStats{AvailableBytes: 500 * mi, WorkingSetBytes: 500 * mi, UsageBytes: 600 * mi},
			PodsMemory: &MemoryStats{AvailableBytes: 500 * mi, WorkingSetBytes: 300 * mi, UsageBytes: 320 * mi}},
		{Memory: &MemoryStats{AvailableBytes: 500 * mi, WorkingSetBytes: 500 * mi, UsageBytes: 700 * mi},
			PodsMemory: &MemoryStats{AvailableBytes: 500 * mi, WorkingSetBytes: 300 * mi, UsageBytes: 300 * mi}},
	}}
	f := &fakeFactory{}
	clk := clock.NewMock()
	clk.Set(t0)
	w := &fakeWorld{}
	m, err := NewManager(Options{Clock: clk, Config: Config{Thresholds: ts, KernelMemcgNotification: true}, Observer: obs, Pods: w, Recorder: w,
		NodeName: "node-a", Memcg: &MemcgNotifications{Factory: f, MemoryRoot: "/sys/fs/cgroup/memory", PodsCgroup: "/orchpods"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if !m.Step(ctx) {
		t.Fatal("no first round")
	}
	armed := func(want ...string) {
		t.Helper()
		var got []string
		for _, n := range f.armed {
			got = append(got, n.desc)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("armed %v, want %v", got, want)
		}
	}
	// 1000-100+100 on the root; 800-80+20 on the pods' cgroup.
	armed("/sys/fs/cgroup/memory/orchpods/memory.usage_in_bytes>=740Mi", "/sys/fs/cgroup/memory/memory.usage_in_bytes>=1000Mi")

	clk.Add(3 * time.Second)
	if !m.Idle() || m.Step(ctx) {
		t.Fatal("a round 3s after the last without a notification")
	}
	f.armed[1].cross()
	if m.Idle() {
		t.Fatal("idle with a crossing waiting")
	}
	if !m.Step(ctx) || obs.calls != 2 {
		t.Fatalf("the crossing made no round at once (observations: %d)", obs.calls)
	}
	// That round was 3s after the arming: the thresholds stay as armed until 10s have passed.
	armed("/sys/fs/cgroup/memory/orchpods/memory.usage_in_bytes>=740Mi", "/sys/fs/cgroup/memory/memory.usage_in_bytes>=1000Mi")
	if next, _ := m.NextDeadline(); !next.Equal(t0.Add(13 * time.Second)) {
		t.Fatalf("next round at %v, want 10s after the notified one", next.Sub(t0))
	}
	clk.Add(10 * time.Second)
	if !m.Step(ctx) {
		t.Fatal("no round at the tick")
	}
	// Armed again from the new inactive file pages (200Mi on the root, none in the pods').
	armed("/sys/fs/cgroup/memory/orchpods/memory.usage_in_bytes>=740Mi", "/sys/fs/cgroup/memory/memory.usage_in_bytes>=1000Mi",
		"/sys/fs/cgroup/memory/orchpods/memory.usage_in_bytes>=720Mi", "/sys/fs/cgroup/memory/memory.usage_in_bytes>=1100Mi")
	if !f.armed[0].stopped || !f.armed[1].stopped || f.armed[2].stopped {
		t.Fatal("the old notifiers were not stopped, or the new ones were")
	}
}

// Without the option, or on a host without notifications, nothing is armed and memory is polled.
func TestMemcgNotificationsOff(t *testing.T) {
	ts := mustThresholds(t, map[string]string{"memory.available": "100Mi"}, nil, nil, nil)
	obs := &script{stats: []Stats{{Memory: &MemoryStats{AvailableBytes: 500 * mi, WorkingSetBytes: 500 * mi, UsageBytes: 600 * mi}}}}
	for _, tc := range []struct {
		name   string
		option bool
		memcg  bool
	}{{"option off", false, true}, {"no host support", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeFactory{}
			var memcg *MemcgNotifications
			if tc.memcg {
				memcg = &MemcgNotifications{Factory: f, MemoryRoot: "/m"}
			}
			clk := clock.NewMock()
			w := &fakeWorld{}
			m, err := NewManager(Options{Clock: clk, Config: Config{Thresholds: ts, KernelMemcgNotification: tc.option}, Observer: obs, Pods: w, Recorder: w,
				NodeName: "node-a", Memcg: memcg, MemcgUnavailable: "cgroup v2 has no memcg threshold notifications"})
			if err != nil {
				t.Fatal(err)
			}
			m.Step(t.Context())
			if len(f.armed) != 0 {
				t.Fatalf("armed %d thresholds", len(f.armed))
			}
		})
	}
}

// A threshold that cannot be armed is logged, and the rounds go on.
func TestMemcgNotificationArmFailure(t *testing.T) {
	ts := mustThresholds(t, map[string]string{"memory.available": "100Mi"}, nil, nil, nil)
	obs := &script{stats: []Stats{{Memory: &MemoryStats{AvailableBytes: 50 * mi, WorkingSetBytes: 950 * mi, UsageBytes: 950 * mi}}}}
	clk := clock.NewMock()
	w := &fakeWorld{}
	m, err := NewManager(Options{Clock: clk, Config: Config{Thresholds: ts, KernelMemcgNotification: true}, Observer: obs, Pods: w, Recorder: w,
		NodeName: "node-a", Memcg: &MemcgNotifications{Factory: &fakeFactory{err: fmt.Errorf("no cgroup.event_control")}, MemoryRoot: "/m"}})
	if err != nil {
		t.Fatal(err)
	}
	m.Step(t.Context())
	if len(w.log) != 1 || !strings.Contains(w.log[0], "EvictionThresholdMet") {
		t.Fatalf("log %q, want the threshold met despite the failed arming", w.log)
	}
}
