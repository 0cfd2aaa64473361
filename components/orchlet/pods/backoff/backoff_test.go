package backoff

import (
	"testing"
	"time"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// TestBackoff follows one key through failures: the first waits Initial, each next one twice the
// last up to Max, and a failure long after the last raise starts again from Initial.
func TestBackoff(t *testing.T) {
	var b Backoff
	if _, wait := b.WaitSince(t0, t0); wait {
		t.Fatal("a key that never failed waits")
	}
	for i, want := range []time.Duration{Initial, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, Max, Max} {
		at := t0.Add(time.Duration(i) * time.Second)
		b.Next(at, at)
		if b.Delay != want {
			t.Fatalf("failure %d: delay %v, want %v", i+1, b.Delay, want)
		}
		until, wait := b.WaitSince(at, at.Add(want-time.Nanosecond))
		if !wait || !until.Equal(at.Add(want)) {
			t.Fatalf("failure %d: wait %v until %v, want until %v", i+1, wait, until, at.Add(want))
		}
		if _, wait := b.WaitSince(at, at.Add(want)); wait {
			t.Fatalf("failure %d: still waits at its end", i+1)
		}
	}
	stale := b.Last.Add(2*Max + time.Second)
	if _, wait := b.WaitSince(stale, stale); wait {
		t.Error("a failure past 2 x Max after the last raise waits")
	}
	b.Next(stale, stale)
	if b.Delay != Initial {
		t.Errorf("delay after a stale entry %v, want %v", b.Delay, Initial)
	}
}
