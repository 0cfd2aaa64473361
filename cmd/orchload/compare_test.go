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

// Ratios read so that above 1 is orch doing better, from the medians of each side's runs; each
// configuration is a row of its own with issue 17's target for it, so one call compares the
// default suite and the scale runs together.
func TestCompare(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, r report) string {
		p := filepath.Join(dir, name)
		data, _ := json.Marshal(r)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	creates := func(clients int, perSecond, cpu float64) report {
		return report{Create: &createResult{Clients: clients, PerSecond: perSecond, ServerCPUMs: cpu}}
	}
	watch := func(watchers int, sent, p99 float64) report {
		return report{Watch: &watchResult{Watchers: watchers, RatePerS: 200, SentPerS: sent, Latency: summary{P99Ms: p99}}}
	}
	// suite is a run of the default suite: creates with 8 clients, a LIST of 10,000 and memory.
	suite := func(perSecond, cpu, listP50, rss, rssAfterLists, rssAtEnd float64, events int) report {
		return report{
			Create: &createResult{Clients: 8, PerSecond: perSecond, ServerCPUMs: cpu}, List: &listResult{Items: 10000, Runs: 10, Latency: summary{P50Ms: listP50}},
			Memory: &memoryResult{RSSMiB: rss}, MemoryAfterLists: &memoryResult{RSSMiB: rssAfterLists}, MemoryAtEnd: &memoryResult{RSSMiB: rssAtEnd, Events: events},
		}
	}
	orch := []string{
		write("o1", suite(4000, 0.12, 10, 80, 110, 100, 40000)),
		write("o2", suite(2000, 0.14, 30, 90, 120, 120, 44000)),
		write("o64", creates(64, 3000, 0.3)),
		write("ow100", watch(100, 200, 5)),
		write("ow10k", watch(10000, 3, 100)),
	}
	peer := []string{
		write("p1", suite(1000, 1, 60, 330, 500, 400, 20000)),
		write("p2", suite(500, 1, 60, 350, 520, 500, 22000)),
		write("p64", creates(64, 1000, 1)),
		write("pw100", watch(100, 150, 40)),
		write("pw10k", watch(10000, 90, 10000)),
	}
	var out strings.Builder
	if err := compare(&out, strings.Join(orch, ",")+":"+strings.Join(peer, ",")); err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for l := range strings.Lines(out.String()) {
		label, _, _ := strings.Cut(l, "  ")
		rows[label] = strings.Join(strings.Fields(l), " ")
	}
	for label, want := range map[string]string{
		"creates/s, 8 clients":                                       "4000, 2000 1000, 500 4.00x >= 4x: met",
		"creates/s, 64 clients":                                      "3000 1000 3.00x >= 4x: not met",
		"server CPU ms per create, 8 clients":                        "0.12, 0.14 1, 1 7.69x orch <= 0.15: met",
		"server CPU ms per create, 64 clients":                       "0.3 1 3.33x",
		"LIST p50 ms, 10000 events":                                  "10, 30 60, 60 3.00x >= 3x: met",
		"watch p99 ms, 100 watchers at 200/s":                        "5 40 8.00x >= 10x: not met",
		"watch p99 ms, 10000 watchers at 200/s":                      "100 10000 100.00x >= 10x: not met (orch did not hold the rate)",
		"watch events sent/s, 10000 watchers at 200/s":               "3 90 0.03x",
		"RSS MiB, holding the LIST's 10000 events":                   "80, 90 330, 350 4.00x >= 4x: met",
		"RSS MiB, after 10 LISTs of 10000 events":                    "110, 120 500, 520 4.43x >= 4x: met",
		"RSS MiB at the end, after create 8 clients, LIST 10000":     "100, 120 400, 500 4.09x >= 4x: met",
		"events held at the end, after create 8 clients, LIST 10000": "40000, 44000 20000, 22000 2.00x",
	} {
		if got := rows[label]; !strings.HasSuffix(got, want) {
			t.Errorf("row %q: %q, want it to end %q\n%s", label, got, want, out.String())
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
