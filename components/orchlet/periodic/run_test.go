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
