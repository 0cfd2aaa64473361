package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// figure is one number of a report, and whether more of it is better.
type figure struct {
	name   string
	higher bool
	read   func(*report) (float64, bool)
}

var figures = []figure{
	{"creates/s", true, func(r *report) (float64, bool) {
		if r.Create == nil {
			return 0, false
		}
		return r.Create.PerSecond, true
	}},
	{"create p99 ms", false, func(r *report) (float64, bool) {
		if r.Create == nil {
			return 0, false
		}
		return r.Create.Latency.P99Ms, true
	}},
	{"server CPU ms per create", false, func(r *report) (float64, bool) {
		if r.Create == nil {
			return 0, false
		}
		return r.Create.ServerCPUMs, true
	}},
	{"LIST p50 ms", false, func(r *report) (float64, bool) {
		if r.List == nil {
			return 0, false
		}
		return r.List.Latency.P50Ms, true
	}},
	{"watch p99 ms", false, func(r *report) (float64, bool) {
		if r.Watch == nil {
			return 0, false
		}
		return r.Watch.Latency.P99Ms, true
	}},
	{"watch events sent/s", true, func(r *report) (float64, bool) {
		if r.Watch == nil || r.Watch.SentPerS == 0 {
			return 0, false
		}
		return r.Watch.SentPerS, true
	}},
	{"KiB per idle watcher", false, func(r *report) (float64, bool) {
		if r.Watch == nil || r.Watch.IdleWatcherKiB == 0 {
			return 0, false
		}
		return r.Watch.IdleWatcherKiB, true
	}},
	{"RSS MiB at the end", false, func(r *report) (float64, bool) {
		if r.MemoryAtEnd == nil {
			return 0, false
		}
		return r.MemoryAtEnd.RSSMiB, true
	}},
}

// compare prints each figure of orch's runs beside the peer's, with the ratio of the medians
// written so that above 1 means orch does better.
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
	fmt.Fprintf(w, "%-26s %-24s %-24s %s\n", "figure", "orch (runs)", "kube-apiserver (runs)", "orch better by")
	for _, f := range figures {
		a, b := values(orch, f), values(peer, f)
		if len(a) == 0 || len(b) == 0 {
			continue
		}
		ratio := median(b) / median(a)
		if f.higher {
			ratio = median(a) / median(b)
		}
		fmt.Fprintf(w, "%-26s %-24s %-24s %.2fx\n", f.name, list(a), list(b), ratio)
	}
	return nil
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

func values(rs []*report, f figure) []float64 {
	var out []float64
	for _, r := range rs {
		if v, ok := f.read(r); ok && v > 0 {
			out = append(out, v)
		}
	}
	return out
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
	}
	return strings.Join(parts, ", ")
}
