package exhaust

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"time"
)

// heapStats are the Go runtime's memory figures of orch-apiserver at one moment, from the
// runtime.MemStats its heap profile ends with (/debug/pprof/heap?debug=1, served by --profiling),
// beside its resident memory: what the heap holds live, what Go keeps unused but not yet given
// back (the scavenger returns it lazily), and what goroutine stacks take.
type heapStats struct {
	point        string
	rssKiB       int64
	heapAlloc    int64 // bytes of live objects and garbage not yet collected
	heapInuse    int64 // bytes in spans holding objects
	heapIdle     int64 // bytes in spans holding none
	heapReleased int64 // of heapIdle, bytes returned to the operating system
	stack        int64 // bytes of goroutine stacks
	sys          int64 // bytes the runtime took from the operating system
	goroutines   int
}

// parseHeapStats reads the "# Name = value" lines of a heap profile in its text form.
func parseHeapStats(text string) (heapStats, error) {
	var s heapStats
	fields := map[string]*int64{"HeapAlloc": &s.heapAlloc, "HeapInuse": &s.heapInuse, "HeapIdle": &s.heapIdle,
		"HeapReleased": &s.heapReleased, "Stack": &s.stack, "Sys": &s.sys}
	seen := 0
	for _, line := range strings.Split(text, "\n") {
		name, value, ok := strings.Cut(strings.TrimPrefix(line, "# "), " = ")
		p, known := fields[name]
		if !ok || !known || !strings.HasPrefix(line, "# ") {
			continue
		}
		// Stack is "inuse / sys".
		first, _, _ := strings.Cut(value, " ")
		n, err := strconv.ParseInt(first, 10, 64)
		if err != nil {
			return s, fmt.Errorf("heap profile: %s = %q: %w", name, value, err)
		}
		*p = n
		seen++
	}
	if seen < len(fields) {
		return s, fmt.Errorf("heap profile: %d of the %d runtime figures found (is --profiling off?)", seen, len(fields))
	}
	return s, nil
}

func (s heapStats) String() string {
	mib := func(b int64) string { return strconv.FormatInt(b>>20, 10) }
	return fmt.Sprintf("%s: resident %d MiB; Go heap in use %s MiB (live and uncollected %s), idle and kept %s, given back %s; stacks %s MiB (%d goroutines); from the system %s MiB",
		s.point, s.rssKiB>>10, mib(s.heapInuse), mib(s.heapAlloc), mib(s.heapIdle-s.heapReleased), mib(s.heapReleased), mib(s.stack), s.goroutines, mib(s.sys))
}

// heapSnapshot asks the server for its heap profile at point: its figures, and with dir set the
// profile itself, heap-<point>.pb.gz, for `go tool pprof`. gc runs a collection first, so that
// the profile and the figures count live objects only.
func heapSnapshot(srv *Target, point, dir string, gc bool) (heapStats, error) {
	query := ""
	if gc {
		query = "gc=1&"
	}
	get := func(path string) ([]byte, error) { return getBody(srv.Client, srv.URL+path) }
	text, err := get("/debug/pprof/heap?" + query + "debug=1")
	if err != nil {
		return heapStats{}, err
	}
	s, err := parseHeapStats(string(text))
	if err != nil {
		return s, err
	}
	s.point, s.rssKiB = point, rssKiB(srv.PID)
	if goroutines, err := get("/debug/pprof/goroutine?debug=1"); err == nil {
		first, _, _ := strings.Cut(string(goroutines), "\n")
		s.goroutines, _ = strconv.Atoi(strings.TrimPrefix(first, "goroutine profile: total "))
	}
	if dir != "" {
		profile, err := get("/debug/pprof/heap")
		if err != nil {
			return s, err
		}
		if err := os.WriteFile(filepath.Join(dir, "heap-"+point+".pb.gz"), profile, 0o644); err != nil {
			return s, err
		}
	}
	return s, nil
}

// serverProfile writes d of one of the server's timed profiles (path: /debug/pprof/profile for
// its CPU, /debug/pprof/trace for its runtime trace) to file.
func serverProfile(srv *Target, path, file string, d time.Duration) error {
	c := &http.Client{Transport: srv.Client.Transport, Timeout: d + 30*time.Second}
	body, err := getBody(c, srv.URL+path+"?seconds="+strconv.Itoa(int(d.Seconds())))
	if err != nil {
		return err
	}
	return os.WriteFile(file, body, 0o644)
}

// traceSelf starts orchchaos' own runtime trace into file; the func returned stops it.
func traceSelf(file string, out io.Writer) func() {
	f, err := os.Create(file)
	if err == nil {
		if err = trace.Start(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintln(out, "   trace:", err)
		return func() {}
	}
	return func() { trace.Stop(); f.Close() }
}

// nonResourceGETs is the server's own latency histogram of GETs of a path that is no resource
// (apiserver_request_duration_seconds with verb GET and no resource): during the attack, the
// /readyz probe's answers, timed from the server's first filter to its answer, without the
// client's and the machine's scheduling around them.
type nonResourceGETs map[float64]float64 // bucket's upper bound (+Inf as math.Inf) to cumulative count

const nonResourceBucket = `apiserver_request_duration_seconds_bucket{group="",resource="",verb="GET",version="",le="`

// kubeReadyzBucket is kube-apiserver's histogram of /readyz alone (the path as its subresource),
// timed from its handler's start, after the authentication, priority and fairness filters.
const kubeReadyzBucket = `apiserver_request_duration_seconds_bucket{component="",dry_run="",group="",resource="",scope="",subresource="/readyz",verb="GET",version="",le="`

// scrapeNonResourceGETs reads the histogram from /metrics: orch-apiserver's of non-resource
// GETs, kube-apiserver's of /readyz.
func scrapeNonResourceGETs(srv *Target) (nonResourceGETs, error) {
	body, err := getBody(srv.Client, srv.URL+"/metrics")
	if err != nil {
		return nil, err
	}
	if srv.EtcdPID != 0 {
		return parseHistogram(string(body), kubeReadyzBucket)
	}
	return parseNonResourceGETs(string(body))
}

func parseNonResourceGETs(metrics string) (nonResourceGETs, error) {
	return parseHistogram(metrics, nonResourceBucket)
}

// parseHistogram reads the buckets of the histogram whose bucket lines start with prefix, up to
// the bound's value, from Prometheus' text format.
func parseHistogram(metrics, prefix string) (map[float64]float64, error) {
	h := map[float64]float64{}
	for _, line := range strings.Split(metrics, "\n") {
		rest, ok := strings.CutPrefix(line, prefix)
		if !ok {
			continue
		}
		le, count, ok := strings.Cut(rest, `"} `)
		if !ok {
			return nil, fmt.Errorf("/metrics: %q", line)
		}
		bound, err := strconv.ParseFloat(le, 64)
		if err != nil {
			return nil, fmt.Errorf("/metrics: %q: %w", line, err)
		}
		n, err := strconv.ParseFloat(count, 64)
		if err != nil {
			return nil, fmt.Errorf("/metrics: %q: %w", line, err)
		}
		h[bound] = n
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("/metrics: no %s... line", prefix)
	}
	return h, nil
}

// runtimeFigures are the server's Go runtime figures at one moment, from /metrics: the histogram
// of how long goroutines waited runnable before they ran (go_sched_latencies_seconds), a request's
// time lost before its handler started or after it answered, which the request's own timing does
// not see; the collections completed; the process's CPU, and the runtime's estimate of the
// collector's share of it and of the part goroutines spent assisting the collector.
type runtimeFigures struct {
	sched                   map[float64]float64
	gcCycles                float64
	cpu, gcCPU, gcAssistCPU float64 // seconds
}

const schedBucket = `go_sched_latencies_seconds_bucket{le="`

// scrapeRuntime reads the figures from /metrics.
func scrapeRuntime(srv *Target) (runtimeFigures, error) {
	body, err := getBody(srv.Client, srv.URL+"/metrics")
	if err != nil {
		return runtimeFigures{}, err
	}
	return parseRuntime(string(body))
}

func parseRuntime(metrics string) (runtimeFigures, error) {
	sched, err := parseHistogram(metrics, schedBucket)
	if err != nil {
		return runtimeFigures{}, err
	}
	f := runtimeFigures{sched: sched}
	for name, v := range map[string]*float64{
		"go_gc_cycles_total_gc_cycles_total":              &f.gcCycles,
		"process_cpu_seconds_total":                       &f.cpu,
		"go_cpu_classes_gc_total_cpu_seconds_total":       &f.gcCPU,
		"go_cpu_classes_gc_mark_assist_cpu_seconds_total": &f.gcAssistCPU,
	} {
		found := false
		for _, line := range strings.Split(metrics, "\n") {
			if rest, ok := strings.CutPrefix(line, name+" "); ok {
				if *v, err = strconv.ParseFloat(rest, 64); err != nil {
					return runtimeFigures{}, fmt.Errorf("/metrics: %q: %w", line, err)
				}
				found = true
			}
		}
		if !found {
			return runtimeFigures{}, fmt.Errorf("/metrics: no %s", name)
		}
	}
	return f, nil
}

// since describes what happened after earlier: the goroutines' waits to run sampled, how many of
// them longer than each of the runtime's two largest finite bounds (about 10 ms and 117 ms), the
// collections, and the CPU with the collector's share.
func (f runtimeFigures) since(earlier runtimeFigures) string {
	var bounds []float64
	for b := range f.sched {
		if !math.IsInf(b, 1) {
			bounds = append(bounds, b)
		}
	}
	slices.Sort(bounds)
	total := f.sched[math.Inf(1)] - earlier.sched[math.Inf(1)]
	line := fmt.Sprintf("%.0f waits", total)
	for _, b := range bounds[max(0, len(bounds)-2):] {
		line += fmt.Sprintf(", over %.1f ms %.0f", b*1000, total-(f.sched[b]-earlier.sched[b]))
	}
	return line + fmt.Sprintf(", %.0f collections, CPU %.2f s (the collector's %.2f s, assists %.2f s)",
		f.gcCycles-earlier.gcCycles, f.cpu-earlier.cpu, f.gcCPU-earlier.gcCPU, f.gcAssistCPU-earlier.gcAssistCPU)
}

// since describes the answers counted after earlier: how many, and how many within 5, 25 and 100 ms.
func (h nonResourceGETs) since(earlier nonResourceGETs) string {
	total := h[math.Inf(1)] - earlier[math.Inf(1)]
	within := func(bound float64) string {
		n := h[bound] - earlier[bound]
		if total == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f%%", 100*n/total)
	}
	return fmt.Sprintf("%.0f answered; within 5 ms %s, 25 ms %s, 100 ms %s", total, within(0.005), within(0.025), within(0.1))
}

// getBody GETs url: its body, or an error for anything but 200.
func getBody(c *http.Client, url string) ([]byte, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: %s %.200s", url, resp.Status, body)
	}
	return body, err
}
