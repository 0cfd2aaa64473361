package periodic

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

// Steps run at once and then at each deadline the component names, on the clock; Run ends with
// its context.
func TestRunStepsAtDeadlines(t *testing.T) {
	clk := clock.NewMock()
	var steps atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Run(ctx, clk, func(context.Context) { steps.Add(1) }, func() time.Time { return clk.Now().Add(time.Minute) })
	}()
	waitFor := func(n int32) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for steps.Load() != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d steps, want %d", steps.Load(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(1)
	clk.Add(59 * time.Second)
	if steps.Load() != 1 {
		t.Fatal("stepped before the deadline")
	}
	clk.Add(time.Second)
	waitFor(2)
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("Run = %v", err)
	}
}

// Every runs at once only when asked, then at each period on the clock, and ends when the work
// says it is done or the context ends.
func TestEvery(t *testing.T) {
	for _, tc := range []struct {
		name      string
		immediate bool
		doneAt    int // the call that reports done; 0: never
	}{
		{name: "at each period"},
		{name: "at once, then at each period", immediate: true},
		{name: "until done", immediate: true, doneAt: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewMock()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			seen := make(chan time.Time)
			calls := 0
			done := make(chan error, 1)
			go func() {
				done <- Every(ctx, clk, time.Minute, tc.immediate, func(context.Context) bool {
					calls++
					seen <- clk.Now()
					return calls == tc.doneAt
				})
			}()
			start := clk.Now()
			if tc.immediate {
				if at := <-seen; !at.Equal(start) {
					t.Fatalf("first call at %v, want at once (%v)", at, start)
				}
			} else {
				// Until the loop has made its ticker, a moved clock is not seen: move it until
				// the first call comes, which must not come before a whole period.
				for first := false; !first; {
					select {
					case at := <-seen:
						if at.Sub(start) < time.Minute {
							t.Fatalf("first call at %v, before a period passed", at.Sub(start))
						}
						first = true
					case <-time.After(10 * time.Millisecond):
						clk.Add(time.Minute)
					}
				}
			}
			for n := 2; n <= 4; n++ {
				if tc.doneAt != 0 && n > tc.doneAt {
					break
				}
				before := clk.Now()
				clk.Add(time.Minute)
				if at := <-seen; !at.Equal(before.Add(time.Minute)) {
					t.Fatalf("call %d at %v, want %v", n, at, before.Add(time.Minute))
				}
			}
			if tc.doneAt != 0 {
				if err := <-done; err != nil {
					t.Fatalf("Every = %v after done, want nil", err)
				}
				clk.Add(time.Minute)
				select {
				case <-seen:
					t.Fatal("called again after done")
				case <-time.After(20 * time.Millisecond):
				}
				return
			}
			cancel()
			if err := <-done; err != context.Canceled {
				t.Fatalf("Every = %v, want context.Canceled", err)
			}
		})
	}
}

// Until waits a whole period after each step returns: a step that takes 30s of a one-minute period
// puts the next at least 90s after the first began, where a ticker would have run it after 60s.
func TestUntilWaitsAfterTheStep(t *testing.T) {
	clk := clock.NewMock()
	start := clk.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := make(chan time.Time)
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- Until(ctx, clk, time.Minute, func(context.Context) {
			seen <- clk.Now()
			<-release
		})
	}()
	began := <-seen
	if !began.Equal(start) {
		t.Fatalf("first step at %v, want at once", began.Sub(start))
	}
	for i := 0; i < 2; i++ {
		clk.Add(30 * time.Second) // the step's own work takes 30s
		release <- struct{}{}
		// The timer is made once the step returns; the clock moves a second at a time until
		// the next step comes, so it may come a few seconds late, never early.
		for got := false; !got; {
			select {
			case at := <-seen:
				if d := at.Sub(began); d < 90*time.Second || d > 100*time.Second {
					t.Fatalf("step %v after the one before began, want 90s (the step's 30s, then a period)", d)
				}
				began, got = at, true
			case <-time.After(10 * time.Millisecond):
				clk.Add(time.Second)
			}
		}
	}
	cancel()
	close(release)
	if err := <-done; err != context.Canceled {
		t.Fatalf("Until = %v, want context.Canceled", err)
	}
}
