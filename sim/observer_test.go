package sim

import (
	"sync"
	"testing"
	"time"
)

// The count of the observer's lines the node keeps (linesWaiting) is the number of lines waiting
// after every add and take: fails when an add or a take leaves it behind.
func TestLinesWaitingIsTheObserversLines(t *testing.T) {
	var n Node
	n.obs = &observer{now: time.Now, waiting: &n.obsWaiting}
	for i, step := range []struct {
		adds int
		take bool
		want int32
	}{
		{adds: 0, want: 0},
		{adds: 1, want: 1},
		{adds: 2, want: 3},
		{take: true, want: 0},
		{take: true, want: 0},
		{adds: 5, take: true, want: 0},
		{adds: 1, want: 1},
	} {
		for range step.adds {
			n.obs.addText(KindAPI, "line")
		}
		if step.take {
			n.obs.take()
		}
		if got := n.linesWaiting(); got != step.want || int(got) != len(n.obs.lines) {
			t.Fatalf("step %d: count %d, %d lines waiting, want %d", i, got, len(n.obs.lines), step.want)
		}
	}

	// Lines added from other goroutines (a Step's, the API requests') while the driver counts and
	// takes: every line is taken once, and the count is then none.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				n.obs.addText(KindEvent, "event")
			}
		})
	}
	taken := len(n.obs.take())
	for range 50 {
		if c := n.linesWaiting(); c > 0 {
			taken += len(n.obs.take())
		}
	}
	wg.Wait()
	taken += len(n.obs.take())
	if taken != 401 || n.linesWaiting() != 0 {
		t.Fatalf("%d lines taken, want 401 (the one left above and 400); count %d after, want 0", taken, n.linesWaiting())
	}
}
