package events

import (
	"context"
	"testing"
	"time"
)

// TestSeries: repeated identical occurrences fold into one Event as client-go's events/v1 recorder
// folds them: created on the first, written as a series of 2 on the second, counted without writes
// after that, written on each heartbeat while open, written a last time and forgotten when not seen
// for the finish period (checked on a sweep every finish period).
func TestSeries(t *testing.T) {
	type occ struct {
		at     time.Duration
		reason string
		note   string
	}
	cases := []struct {
		name string
		occs []occ
		// until is how long the clock runs.
		until time.Duration
		want  string
	}{
		{
			name:  "a single event is created once",
			occs:  []occ{{0, "Started", "n"}},
			until: 20 * time.Minute,
			want:  "create Started first=0s\n",
		},
		{
			name:  "second occurrence makes a series of 2, later ones count until the series ends",
			occs:  []occ{{0, "BackOff", "n"}, {10 * time.Second, "BackOff", "n"}, {20 * time.Second, "BackOff", "n"}, {30 * time.Second, "BackOff", "n"}},
			until: 20 * time.Minute,
			// The sweep at 6m sees the series last observed 5m30s ago; the one at 12m ends it.
			want: "create BackOff first=0s\n" +
				"update BackOff first=0s count=2 last=10s\n" +
				"update BackOff first=0s count=4 last=30s\n",
		},
		{
			name:  "a different note or reason is another event",
			occs:  []occ{{0, "BackOff", "n"}, {time.Second, "BackOff", "other"}, {2 * time.Second, "Failed", "n"}},
			until: time.Minute,
			want:  "create BackOff first=0s\ncreate BackOff first=1s\ncreate Failed first=2s\n",
		},
		{
			name:  "after a series ends the same occurrence starts a new event",
			occs:  []occ{{0, "BackOff", "n"}, {time.Second, "BackOff", "n"}, {13 * time.Minute, "BackOff", "n"}},
			until: 14 * time.Minute,
			want: "create BackOff first=0s\n" +
				"update BackOff first=0s count=2 last=1s\n" +
				"update BackOff first=0s count=2 last=1s\n" +
				"create BackOff first=13m0s\n",
		},
		{
			name:  "a forgotten singleton is created again",
			occs:  []occ{{0, "Started", "n"}, {13 * time.Minute, "Started", "n"}},
			until: 14 * time.Minute,
			want:  "create Started first=0s\ncreate Started first=13m0s\n",
		},
		{
			name: "an open series is written on every heartbeat",
			occs: func() []occ {
				var o []occ
				for at := time.Duration(0); at <= 65*time.Minute; at += 5 * time.Minute {
					o = append(o, occ{at, "BackOff", "n"})
				}
				return o
			}(),
			until: 80 * time.Minute,
			want: "create BackOff first=0s\n" +
				"update BackOff first=0s count=2 last=5m0s\n" +
				"update BackOff first=0s count=7 last=30m0s\n" + // heartbeat at 30m
				"update BackOff first=0s count=13 last=1h0m0s\n" + // heartbeat at 60m
				"update BackOff first=0s count=14 last=1h5m0s\n", // ended by the sweep at 72m
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newMock()
			sink := &memSink{t: t}
			r := mustNew(t, Options{Clock: clk, NodeName: "node-a", Sink: sink, QPS: 50, Burst: 100})
			// Drive it as the simulator does: at each instant run the occurrences due, Step, then jump
			// to the next occurrence or the recorder's next deadline, whichever is first.
			next := 0
			for at := time.Duration(0); ; {
				for next < len(tc.occs) && tc.occs[next].at == at {
					r.Eventf(pod("web"), Warning, tc.occs[next].reason, "Sync", "%s", tc.occs[next].note)
					next++
				}
				r.Step(context.Background())
				jump := tc.until + 1
				if next < len(tc.occs) {
					jump = tc.occs[next].at
				}
				if d, ok := r.NextDeadline(); ok && d.Sub(start) < jump {
					jump = d.Sub(start)
				}
				if jump > tc.until {
					break
				}
				at = jump
				clk.Set(start.Add(at))
			}
			if got := sink.summary(); got != tc.want {
				t.Errorf("writes:\n%s\nwant:\n%s", got, tc.want)
			}
			// Every write of one event carries the name and time of its first occurrence.
			names := map[string]time.Time{}
			for _, w := range sink.writes {
				if first, ok := names[w.event.Name]; ok && !first.Equal(w.event.EventTime.Time) {
					t.Errorf("%s written with eventTime %v, first %v", w.event.Name, w.event.EventTime, first)
				}
				names[w.event.Name] = w.event.EventTime.Time
			}
		})
	}
}

// TestIdle: the recorder is idle only with nothing queued and no sweep due, and it has a deadline
// only while it caches events.
func TestIdle(t *testing.T) {
	clk := newMock()
	r := mustNew(t, Options{Clock: clk, NodeName: "node-a", Sink: &memSink{t: t}, QPS: 50, Burst: 100})
	if !r.Idle() {
		t.Fatal("a new recorder is not idle")
	}
	if _, ok := r.NextDeadline(); ok {
		t.Fatal("a new recorder has a deadline")
	}
	r.Eventf(pod("web"), Normal, "Started", "Start", "started")
	if r.Idle() || r.Pending() != 1 {
		t.Fatalf("after Eventf: Idle %v Pending %d, want false 1", r.Idle(), r.Pending())
	}
	r.Step(context.Background())
	if !r.Idle() {
		t.Fatal("not idle after Step")
	}
	next, ok := r.NextDeadline()
	if !ok || !next.Equal(start.Add(DefaultFinish)) {
		t.Fatalf("NextDeadline %v %v, want the sweep at %v", next, ok, start.Add(DefaultFinish))
	}
	clk.Set(next)
	if r.Idle() {
		t.Fatal("idle with a sweep due")
	}
	r.Step(context.Background())
	clk.Add(DefaultFinish)
	r.Step(context.Background()) // forgets the singleton
	if _, ok := r.NextDeadline(); ok || !r.Idle() {
		t.Fatalf("with an empty cache: deadline %v, idle %v", ok, r.Idle())
	}
}

// TestRunOnMockClock: Run writes queued events without a clock advance and runs sweeps when the clock
// reaches them.
func TestRunOnMockClock(t *testing.T) {
	clk := newMock()
	written := make(chan string, 10)
	sink := &chanSink{c: written}
	r := mustNew(t, Options{Clock: clk, NodeName: "node-a", Sink: sink, QPS: 50, Burst: 100})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- r.Run(ctx) }()
	r.Eventf(pod("web"), Warning, "BackOff", "Sync", "n")
	r.Eventf(pod("web"), Warning, "BackOff", "Sync", "n")
	for _, want := range []string{"create", "update"} {
		if got := <-written; got != want {
			t.Fatalf("wrote %s, want %s", got, want)
		}
	}
	// The series ends at the second sweep; keep moving the clock until Run has armed its timer.
	for {
		clk.Add(DefaultFinish)
		select {
		case got := <-written:
			if got != "update" {
				t.Fatalf("wrote %s, want the final update", got)
			}
			cancel()
			if err := <-done; err != context.Canceled {
				t.Errorf("Run returned %v", err)
			}
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}
