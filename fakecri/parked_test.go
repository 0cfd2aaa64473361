package fakecri

import (
	"testing"
	"time"
)

// TestParkedWaits: the calls waiting on the clock, kept in a slice, are counted by Idle and
// timed by NextWakeup as they come and go, in any order: each row parks and unparks waits, then
// holds Idle and NextWakeup to what the waits left parked say.
func TestParkedWaits(t *testing.T) {
	const never = -1 // a wait until its caller gives up
	for _, tc := range []struct {
		name     string
		park     []time.Duration // from now; never for a zero time
		unpark   []int           // indexes into park
		sleeping int             // waits still asleep after the clock moves 5s
		next     time.Duration   // NextWakeup from the start, 0 for none
	}{
		{"none", nil, nil, 0, 0},
		{"one", []time.Duration{10 * time.Second}, nil, 1, 10 * time.Second},
		{"one gone", []time.Duration{10 * time.Second}, []int{0}, 0, 0},
		{"due and not", []time.Duration{3 * time.Second, 10 * time.Second}, nil, 1, 3 * time.Second},
		{"until cancelled", []time.Duration{never, 3 * time.Second}, nil, 1, 3 * time.Second},
		{"first of three gone", []time.Duration{20 * time.Second, 10 * time.Second, 30 * time.Second}, []int{1}, 2, 20 * time.Second},
		{"middle gone", []time.Duration{20 * time.Second, 10 * time.Second, 30 * time.Second}, []int{0}, 2, 10 * time.Second},
		{"last gone, then first", []time.Duration{20 * time.Second, 10 * time.Second, 30 * time.Second}, []int{2, 0}, 1, 10 * time.Second},
		{"all gone", []time.Duration{never, 10 * time.Second, 30 * time.Second}, []int{1, 0, 2}, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			r := f.RT
			start := r.now()
			ids := make([]uint64, len(tc.park))
			for i, d := range tc.park {
				var until time.Time
				if d != never {
					until = start.Add(d)
				}
				ids[i] = r.park(until)
			}
			for _, i := range tc.unpark {
				r.unpark(ids[i])
			}
			left := int64(len(tc.park) - len(tc.unpark))
			defer r.inflight.Store(0)
			if next, ok := r.NextWakeup(); ok != (tc.next != 0) || ok && !next.Equal(start.Add(tc.next)) {
				t.Errorf("NextWakeup %v %v, want %v from the start", next, ok, tc.next)
			}
			f.Mock.Add(5 * time.Second)
			// Idle while every call in flight sleeps, and not with one more awake.
			for _, inflight := range []int64{left, int64(tc.sleeping), int64(tc.sleeping) + 1} {
				r.inflight.Store(inflight)
				if want := inflight <= int64(tc.sleeping); r.Idle() != want {
					t.Errorf("Idle %v with %d calls in flight and %d waits asleep, want %v", !want, inflight, tc.sleeping, want)
				}
			}
		})
	}
}
