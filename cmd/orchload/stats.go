package main

import (
	"math"
	"slices"
	"time"
)

// summary holds the figures of a set of latencies, in milliseconds so the JSON reads directly.
type summary struct {
	Count int     `json:"count"`
	MinMs float64 `json:"minMs"`
	P50Ms float64 `json:"p50Ms"`
	P90Ms float64 `json:"p90Ms"`
	P99Ms float64 `json:"p99Ms"`
	MaxMs float64 `json:"maxMs"`
}

// summarize sorts d in place and returns its nearest-rank percentiles.
func summarize(d []time.Duration) summary {
	if len(d) == 0 {
		return summary{}
	}
	slices.Sort(d)
	return summary{
		Count: len(d),
		MinMs: ms(d[0]),
		P50Ms: ms(percentile(d, 50)),
		P90Ms: ms(percentile(d, 90)),
		P99Ms: ms(percentile(d, 99)),
		MaxMs: ms(d[len(d)-1]),
	}
}

// percentile is the nearest-rank percentile p (0 < p <= 100) of sorted: the smallest value with at
// least p% of the values at or below it. No interpolation, so it is always a value that was measured.
func percentile(sorted []time.Duration, p float64) time.Duration {
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = max(1, min(rank, len(sorted)))
	return sorted[rank-1]
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }
