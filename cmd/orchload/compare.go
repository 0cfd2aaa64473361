package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// figure is one number of a report, and whether more of it is better. A report gives a figure
// for one configuration of its benchmark (8 or 64 clients, 10,000 or 100,000 events, ...): each
// configuration is a row of its own, and reports of different configurations can be compared in
// one call.
type figure struct {
	name   string
	higher bool
	read   func(*report) (v float64, config string, ok bool)
}

var figures = []figure{
	{"creates/s", true, func(r *report) (float64, string, bool) {
		if r.Create == nil {
			return 0, "", false
		}
		return r.Create.PerSecond, clients(r.Create), true
	}},
	{"create p99 ms", false, func(r *report) (float64, string, bool) {
		if r.Create == nil {
			return 0, "", false
		}
		return r.Create.Latency.P99Ms, clients(r.Create), true
	}},
	{"server CPU ms per create", false, func(r *report) (float64, string, bool) {
		if r.Create == nil {
			return 0, "", false
		}
		return r.Create.ServerCPUMs, clients(r.Create), true
	}},
	{"LIST p50 ms", false, func(r *report) (float64, string, bool) {
		if r.List == nil {
			return 0, "", false
		}
		return r.List.Latency.P50Ms, fmt.Sprintf("%d events", r.List.Items), true
	}},
	{"watch p99 ms", false, func(r *report) (float64, string, bool) {
		if r.Watch == nil {
			return 0, "", false
		}
		return r.Watch.Latency.P99Ms, watchers(r.Watch), true
	}},
	{"watch events sent/s", true, func(r *report) (float64, string, bool) {
		if r.Watch == nil || r.Watch.SentPerS == 0 {
			return 0, "", false
		}
		return r.Watch.SentPerS, watchers(r.Watch), true
	}},
	{"watch deliveries made %", true, func(r *report) (float64, string, bool) {
		if r.Watch == nil || r.Watch.Expected == 0 {
			return 0, "", false
		}
		return 100 * float64(r.Watch.Delivered) / float64(r.Watch.Expected), watchers(r.Watch), true
	}},
	{"KiB per idle watcher", false, func(r *report) (float64, string, bool) {
		if r.Watch == nil || r.Watch.IdleWatcherKiB == 0 {
			return 0, "", false
		}
		return r.Watch.IdleWatcherKiB, fmt.Sprintf("%d watchers", r.Watch.Watchers), true
	}},
	// Memory with both servers holding the same events: the LIST benchmark's, before and after
	// its LISTs. At the end each holds what it created in the same time, so orch holds more.
	{"RSS MiB", false, func(r *report) (float64, string, bool) {
		if r.Memory == nil || r.List == nil {
			return 0, "", false
		}
		return r.Memory.RSSMiB, fmt.Sprintf("holding the LIST's %d events", r.List.Items), true
	}},
	{"RSS MiB", false, func(r *report) (float64, string, bool) {
		if r.MemoryAfterLists == nil || r.List == nil {
			return 0, "", false
		}
		return r.MemoryAfterLists.RSSMiB, fmt.Sprintf("after %d LISTs of %d events", r.List.Runs, r.List.Items), true
	}},
	{"RSS MiB at the end", false, func(r *report) (float64, string, bool) {
		if r.MemoryAtEnd == nil {
			return 0, "", false
		}
		return r.MemoryAtEnd.RSSMiB, "after " + r.load(), true
	}},
	{"events held at the end", true, func(r *report) (float64, string, bool) {
		if r.MemoryAtEnd == nil {
			return 0, "", false
		}
		return float64(r.MemoryAtEnd.Events), "after " + r.load(), true
	}},
}

func clients(c *createResult) string { return fmt.Sprintf("%d clients", c.Clients) }

func watchers(w *watchResult) string {
	return fmt.Sprintf("%d watchers at %g/s", w.Watchers, w.RatePerS)
}

// load names what a run did, for the memory it ended with.
func (r *report) load() string {
	var parts []string
	if r.Create != nil {
		parts = append(parts, "create "+clients(r.Create))
	}
	if r.List != nil {
		parts = append(parts, fmt.Sprintf("LIST %d", r.List.Items))
	}
	if r.Watch != nil {
		parts = append(parts, "watch "+watchers(r.Watch))
	}
	return strings.Join(parts, ", ")
}

// goal is one of the targets orch-apiserver is held to beside kube-apiserver: orch better than the
// peer by at least ratio, or orch's own figure at most orchMax.
type goal struct {
	ratio   float64
	orchMax float64
}

// goals are the targets by row (figure, configuration); every RSS row has the one RSS goal, 4x
// lower after the load.
var goals = map[string]goal{
	"creates/s, 8 clients":                  {ratio: 4},
	"creates/s, 64 clients":                 {ratio: 4},
	"create p99 ms, 8 clients":              {ratio: 2},
	"server CPU ms per create, 8 clients":   {orchMax: 0.15},
	"LIST p50 ms, 10000 events":             {ratio: 3},
	"LIST p50 ms, 100000 events":            {ratio: 3},
	"watch p99 ms, 100 watchers at 200/s":   {ratio: 10},
	"watch p99 ms, 10000 watchers at 200/s": {ratio: 10},
}

var rssGoal = goal{ratio: 4}

func goalOf(f figure, row string) (goal, bool) {
	if strings.HasPrefix(f.name, "RSS MiB") {
		return rssGoal, true
	}
	g, ok := goals[row]
	return g, ok
}

// row is one line of the comparison: a figure in one configuration, each side's runs.
type row struct {
	label      string
	fig        figure
	orch, peer []float64
	// rateMissed: a watch row whose orch runs did not send at the rate asked, so its latencies
	// are not latencies at that rate.
	rateMissed bool
}

// verdict reads a row against its goal: the ratio of the medians written so that above 1 means
// orch does better.
func (r row) verdict() (ratio float64, target string) {
	a, b := median(r.orch), median(r.peer)
	ratio = b / a
	if r.fig.higher {
		ratio = a / b
	}
	g, ok := goalOf(r.fig, r.label)
	switch {
	case !ok:
		return ratio, ""
	case g.orchMax > 0:
		return ratio, fmt.Sprintf("orch <= %g: %s", g.orchMax, metOrNot(a <= g.orchMax))
	case r.rateMissed:
		return ratio, fmt.Sprintf(">= %gx: not met (orch did not hold the rate)", g.ratio)
	default:
		return ratio, fmt.Sprintf(">= %gx: %s", g.ratio, metOrNot(ratio >= g.ratio))
	}
}

func metOrNot(met bool) string {
	if met {
		return "met"
	}
	return "not met"
}

// compare prints each figure of orch's runs beside the peer's, a row per figure and configuration
// that both sides measured, with the ratio of the medians written so that above 1 means orch does
// better, and the row's target where it has one.
func compare(w io.Writer, spec string) error {
	orchFiles, peerFiles, ok := strings.Cut(spec, ":")
	if !ok {
		return fmt.Errorf("--compare %q: want ORCH.json[,...]:PEER.json[,...]", spec)
	}
	orch, err := readReports(orchFiles)
	if err != nil {
		return err
	}
	peer, err := readReports(peerFiles)
	if err != nil {
		return err
	}
	var rows []*row
	byLabel := map[string]*row{}
	add := func(f figure, r *report, peerSide bool) {
		v, config, ok := f.read(r)
		if !ok || v <= 0 {
			return
		}
		label := f.name + ", " + config
		rw := byLabel[label]
		if rw == nil {
			rw = &row{label: label, fig: f}
			byLabel[label] = rw
			rows = append(rows, rw)
		}
		if peerSide {
			rw.peer = append(rw.peer, v)
			return
		}
		rw.orch = append(rw.orch, v)
		if r.Watch != nil && f.name == "watch p99 ms" && !r.Watch.rateHeld() {
			rw.rateMissed = true
		}
	}
	for _, f := range figures {
		for _, r := range orch {
			add(f, r, false)
		}
		for _, r := range peer {
			add(f, r, true)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\torch (runs)\tkube-apiserver (runs)\torch better by\ttarget")
	for _, r := range rows {
		if len(r.orch) == 0 || len(r.peer) == 0 {
			continue
		}
		ratio, target := r.verdict()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2fx\t%s\n", r.label, list(r.orch), list(r.peer), ratio, target)
	}
	return tw.Flush()
}

func readReports(files string) ([]*report, error) {
	var out []*report
	for _, name := range strings.Split(files, ",") {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		r := &report{}
		if err := json.Unmarshal(data, r); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func list(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = fmt.Sprintf("%.4g", x)
		if x >= 1e4 && x == math.Trunc(x) {
			parts[i] = fmt.Sprintf("%.0f", x) // a count, not 4e+04
		}
	}
	return strings.Join(parts, ", ")
}
