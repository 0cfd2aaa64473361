package main

import (
	"testing"
	"time"
)

func TestPercentileNearestRank(t *testing.T) {
	d := make([]time.Duration, 100)
	for i := range d {
		d[i] = time.Duration(100-i) * time.Millisecond // reversed: summarize must sort
	}
	s := summarize(d)
	want := summary{Count: 100, MinMs: 1, P50Ms: 50, P90Ms: 90, P99Ms: 99, MaxMs: 100}
	if s != want {
		t.Fatalf("summarize = %+v, want %+v", s, want)
	}
	cases := []struct {
		values []time.Duration
		p      float64
		want   time.Duration
	}{
		{[]time.Duration{7}, 99, 7},
		{[]time.Duration{1, 2}, 50, 1},
		{[]time.Duration{1, 2}, 51, 2},
		{[]time.Duration{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 99, 10}, // the one slow request shows at p99
		{[]time.Duration{1, 2, 3}, 100, 3},
	}
	for _, c := range cases {
		if got := percentile(c.values, c.p); got != c.want {
			t.Errorf("percentile(%v, %g) = %v, want %v", c.values, c.p, got, c.want)
		}
	}
	if s := summarize(nil); s != (summary{}) {
		t.Errorf("summarize(nil) = %+v, want zero", s)
	}
	if got := ms(1234567 * time.Nanosecond); got != 1.235 {
		t.Errorf("ms = %v, want 1.235", got)
	}
}
