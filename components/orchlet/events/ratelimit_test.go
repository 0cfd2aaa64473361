package events

import (
	"context"
	"fmt"
	"testing"
	"time"

	apiversion "k8s.io/apimachinery/pkg/version"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/orchlet/options"
)

// TestRateLimit: a storm of distinct events at one instant records exactly --event-burst of them and
// drops the rest, each drop reported with the running total; one second later exactly --event-qps
// more get through. The limits come from the options package, which reads 0 as 5 and 10.
func TestRateLimit(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		qps, burst int
	}{
		{"defaults", nil, 50, 100},
		{"zero means 5 and 10", []string{"--event-qps=0", "--event-burst=0"}, 5, 10},
		{"set", []string{"--event-qps=3", "--event-burst=7"}, 3, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := options.Parse(tc.args, apiversion.Info{})
			if err != nil {
				t.Fatal(err)
			}
			if int(o.Config.EventRecordQPS) != tc.qps || int(o.Config.EventBurst) != tc.burst {
				t.Fatalf("options gave %d/%d, want %d/%d", o.Config.EventRecordQPS, o.Config.EventBurst, tc.qps, tc.burst)
			}
			clk := newMock()
			sink := &memSink{t: t}
			var totals []uint64
			r := mustNew(t, Options{
				Clock: clk, NodeName: "node-a", Sink: sink,
				QPS: o.Config.EventRecordQPS, Burst: o.Config.EventBurst,
				OnDrop: func(_ *eventsv1.Event, total uint64) { totals = append(totals, total) },
			})
			storm := func(round, n int) {
				for i := range n {
					r.Eventf(pod("web"), Warning, "BackOff", "Pulling", "round %d occurrence %d", round, i)
				}
				r.Step(context.Background())
			}
			const extra = 37
			storm(0, tc.burst+extra)
			if got := sink.creates(); got != tc.burst {
				t.Errorf("storm recorded %d, want the burst %d", got, tc.burst)
			}
			if got := r.Dropped(); got != extra {
				t.Errorf("Dropped() = %d, want %d", got, extra)
			}
			if len(totals) != extra || totals[0] != 1 || totals[extra-1] != extra {
				t.Errorf("OnDrop totals %v, want 1..%d", totals, extra)
			}

			clk.Add(time.Second)
			storm(1, tc.burst+extra)
			if got := sink.creates() - tc.burst; got != tc.qps {
				t.Errorf("one second later recorded %d more, want qps %d", got, tc.qps)
			}
			if got, want := r.Dropped(), uint64(extra+tc.burst+extra-tc.qps); got != want {
				t.Errorf("Dropped() = %d, want %d", got, want)
			}
		})
	}
}

// TestDroppedOccurrenceIsNotCounted: an occurrence the limiter drops does not join a series either.
func TestDroppedOccurrenceIsNotCounted(t *testing.T) {
	clk := newMock()
	sink := &memSink{t: t}
	r := mustNew(t, Options{Clock: clk, NodeName: "node-a", Sink: sink, QPS: 1, Burst: 2})
	for range 5 {
		r.Eventf(pod("web"), Normal, "Pulled", "Pull", "same")
	}
	clk.Add(7 * time.Minute)
	r.Step(context.Background())
	clk.Add(6 * time.Minute)
	r.Step(context.Background())
	want := "create Pulled first=0s\nupdate Pulled first=0s count=2 last=0s\nupdate Pulled first=0s count=2 last=0s\n"
	if got := sink.summary(); got != want {
		t.Errorf("writes:\n%s\nwant:\n%s", got, want)
	}
	if r.Dropped() != 3 {
		t.Errorf("Dropped() = %d, want 3", r.Dropped())
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	long := fmt.Sprintf("%0129d", 0)
	cases := []struct {
		name string
		o    Options
		want string
	}{
		{"no clock", Options{NodeName: "n", QPS: 1, Burst: 1, Sink: &memSink{}}, "events: a clock is required"},
		{"no sink", Options{Clock: newMock(), NodeName: "n", QPS: 1, Burst: 1}, "events: a sink is required"},
		{"no node", Options{Clock: newMock(), QPS: 1, Burst: 1, Sink: &memSink{}}, "events: a node name is required: it is every event's reportingInstance"},
		{"long node", Options{Clock: newMock(), NodeName: long, QPS: 1, Burst: 1, Sink: &memSink{}}, fmt.Sprintf("events: node name %q is longer than the 128 characters of reportingInstance", long)},
		{"zero qps", Options{Clock: newMock(), NodeName: "n", Burst: 1, Sink: &memSink{}}, "events: --event-qps 0: must be positive once 0 has been read as 5"},
		{"negative burst", Options{Clock: newMock(), NodeName: "n", QPS: 1, Burst: -1, Sink: &memSink{}}, "events: --event-burst -1: must be positive once 0 has been read as 10"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.o); err == nil || err.Error() != tc.want {
				t.Errorf("New: %v, want %q", err, tc.want)
			}
		})
	}
}
