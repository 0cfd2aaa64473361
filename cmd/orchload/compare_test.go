package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Ratios read so that above 1 is orch doing better, from the medians of each side's runs.
func TestCompare(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, perSecond, listP50 float64) string {
		p := filepath.Join(dir, name)
		data, _ := json.Marshal(report{Create: &createResult{PerSecond: perSecond}, List: &listResult{Latency: summary{P50Ms: listP50}}})
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	spec := write("o1", 4000, 10) + "," + write("o2", 2000, 30) + ":" + write("p1", 1000, 60) + "," + write("p2", 500, 60)
	var out strings.Builder
	if err := compare(&out, spec); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"creates/s", "4000, 2000", "1000, 500", "4.00x", "LIST p50 ms", "3.00x"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := compare(&out, "only-one-side.json"); err == nil {
		t.Error("a spec without the peer side was accepted")
	}
}

// Memory per idle watcher is measured only with enough watches to show in the server's RSS; with
// fewer the report says so rather than print noise.
func TestIdleWatcherMemoryNeedsEnoughWatches(t *testing.T) {
	var out strings.Builder
	report{Watch: &watchResult{Watchers: 100}}.print(&out)
	if !strings.Contains(out.String(), "not measured: 100 watches are too few") {
		t.Errorf("100 watches:\n%s", out.String())
	}
	out.Reset()
	report{Watch: &watchResult{Watchers: 2000, IdleWatcherKiB: 80}}.print(&out)
	if !strings.Contains(out.String(), "80.0 KiB of server RSS per open watch (2000 watches)") {
		t.Errorf("2000 watches:\n%s", out.String())
	}
}

// A watch run whose creates could not go out at the rate asked (a server busy delivering to many
// watchers slows its creates) says so and misses its target, however low its latencies.
func TestWatchVerdictNeedsTheRateHeld(t *testing.T) {
	start := time.Date(2026, 11, 28, 16, 0, 0, 0, time.UTC)
	interval := 5 * time.Millisecond // 200/s
	for _, tc := range []struct {
		name    string
		n       int
		took    time.Duration
		want    float64
		verdict string
	}{
		{"kept pace, the last answered at once", 500, 2495 * time.Millisecond, 200, "met"},
		{"kept pace, the last answered late", 500, 2520 * time.Millisecond, 198.4, "met"},
		{"fell behind", 400, 65 * time.Second, 6.15, "MISSED"},
		{"nothing sent", 0, time.Second, 0, "MISSED"},
	} {
		got := sentRate(tc.n, start, start.Add(tc.took), interval)
		if got < tc.want-0.05 || got > tc.want+0.05 {
			t.Errorf("%s: sent at %.2f/s, want %.2f", tc.name, got, tc.want)
		}
		var out strings.Builder
		wa := &watchResult{Watchers: 100, Events: tc.n, RatePerS: 200, SentPerS: got, Latency: summary{P99Ms: 8}, Complete: true}
		report{Watch: wa, Targets: defaultTargets}.print(&out)
		line := ""
		for l := range strings.Lines(out.String()) {
			if strings.HasPrefix(l, "watch,") {
				line = l
			}
		}
		if !strings.Contains(line, fmt.Sprintf("sent at %.1f/s", got)) || !strings.HasSuffix(strings.TrimSpace(line), tc.verdict) {
			t.Errorf("%s: want the rate sent and %s in\n%s", tc.name, tc.verdict, line)
		}
	}
}
