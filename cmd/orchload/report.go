package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// targets are the goals the figures are read against (SPEC.md's for orch-apiserver).
type targets struct {
	CreatesPerSecond float64 `json:"createsPerSecond"`
	CreateP99Ms      float64 `json:"createP99Ms"`
	ListP99Ms        float64 `json:"listP99Ms"`
	ListEvents       int     `json:"listEvents"`
	WatchP99Ms       float64 `json:"watchP99Ms"`
	RSSMiB           float64 `json:"rssMiB"`
}

var defaultTargets = targets{
	CreatesPerSecond: 2500,
	CreateP99Ms:      15,
	ListP99Ms:        150,
	ListEvents:       10000,
	WatchP99Ms:       50,
	RSSMiB:           150,
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "MISSED"
}

// reopenedNote shows how many watches opened only at a later attempt.
func reopenedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("  %d opens retried", n)
}

// cpuNote shows the server's CPU per operation when the tool could read it.
func cpuNote(msPerOp float64, op string) string {
	if msPerOp == 0 {
		return ""
	}
	return fmt.Sprintf("  server CPU %.3g ms/%s", msPerOp, op)
}

func (r report) print(out io.Writer) {
	fmt.Fprintf(out, "orchload: %s\n", r.Server)
	fmt.Fprintf(out, "%d CPUs; load average %s at start, %s at end (the figures are only as quiet as the machine)\n\n", r.CPUs, r.LoadStart, r.LoadEnd)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "BENCHMARK\tFIGURES\tTARGET\tVERDICT")
	tg := r.Targets
	if c := r.Create; c != nil {
		fmt.Fprintf(w, "create, %d clients, %gs\t%.0f events/s  p50 %.2f  p90 %.2f  p99 %.2f  max %.2f ms  errors %d%s\t>= %.0f/s, p99 < %.0f ms\t%s\n",
			c.Clients, c.DurationS, c.PerSecond, c.Latency.P50Ms, c.Latency.P90Ms, c.Latency.P99Ms, c.Latency.MaxMs, c.Errors, cpuNote(c.ServerCPUMs, "create"),
			tg.CreatesPerSecond, tg.CreateP99Ms, verdict(c.PerSecond >= tg.CreatesPerSecond && c.Latency.P99Ms < tg.CreateP99Ms && c.Errors == 0))
	}
	if l := r.List; l != nil {
		fmt.Fprintf(w, "LIST %d events, %d runs\tp50 %.1f  p99 %.1f  min %.1f ms  %.1f MiB per response%s\t< %.0f ms at %d\t%s\n",
			l.Items, l.Runs, l.Latency.P50Ms, l.Latency.P99Ms, l.Latency.MinMs, float64(l.Bytes)/(1<<20), cpuNote(l.ServerCPUMs, "LIST"),
			tg.ListP99Ms, tg.ListEvents, verdict(l.Latency.P99Ms < tg.ListP99Ms && l.Items >= tg.ListEvents))
	}
	if wa := r.Watch; wa != nil && wa.IdleWatcherKiB > 0 {
		fmt.Fprintf(w, "memory per idle watcher\t%.1f KiB of server RSS per open watch (%d watches)\t(for the record)\t\n", wa.IdleWatcherKiB, wa.Watchers)
	} else if wa != nil && wa.Watchers < minWatchersForMemory {
		fmt.Fprintf(w, "memory per idle watcher\tnot measured: %d watches are too few to show in the RSS (--watchers %d or more)\t(for the record)\t\n", wa.Watchers, minWatchersForMemory)
	}
	if wa := r.Watch; wa != nil {
		fmt.Fprintf(w, "watch, %d watchers, %d events at %g/s\tsent at %.1f/s  p50 %.2f  p99 %.2f  max %.2f ms  delivered %d/%d  errors %d%s%s\tp99 < %.0f ms, all delivered, the rate held\t%s\n",
			wa.Watchers, wa.Events, wa.RatePerS, wa.SentPerS, wa.Latency.P50Ms, wa.Latency.P99Ms, wa.Latency.MaxMs, wa.Delivered, wa.Expected, wa.Errors, reopenedNote(wa.Reopened), cpuNote(wa.ServerCPUMs, "event"),
			tg.WatchP99Ms, verdict(wa.Latency.P99Ms < tg.WatchP99Ms && wa.Complete && wa.rateHeld()))
	}
	if m, after := r.Memory, r.MemoryAfterLists; m != nil && after != nil {
		fmt.Fprintf(w, "memory with the LIST's %d events\tRSS %.1f MiB (anonymous %.1f) before the LISTs, %.1f MiB after them  peak %.1f MiB\t< %.0f MiB at %d\t%s\n",
			m.Events, m.RSSMiB, m.AnonMiB, after.RSSMiB, after.PeakRSSMiB, tg.RSSMiB, tg.ListEvents, verdict(m.RSSMiB < tg.RSSMiB && m.Events >= tg.ListEvents))
	}
	if m := r.MemoryAtEnd; m != nil {
		fmt.Fprintf(w, "memory at the end, %d events\tRSS %.1f MiB (anonymous %.1f)  peak %.1f MiB\t(for the record)\t\n",
			m.Events, m.RSSMiB, m.AnonMiB, m.PeakRSSMiB)
	} else if r.Memory == nil {
		fmt.Fprintln(w, "memory\tnot measured (only with --start)\t\t")
	}
	_ = w.Flush()
	if r.Create != nil {
		for _, s := range r.Create.ErrorSamples {
			fmt.Fprintln(out, "create error:", s)
		}
	}
	if r.Watch != nil {
		for _, s := range r.Watch.ErrorSamples {
			fmt.Fprintln(out, "watch error:", s)
		}
	}
}
