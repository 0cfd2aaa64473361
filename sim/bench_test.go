package sim

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"orch.io/orch/fakecri/script"
)

// busyNode adds a node with 110 pods: 60 from the manifest directory (one of them crash-looping),
// 50 from the manifest URL. They all start at once, an event storm the rate limit cuts.
func busyNode(b *testing.B, w *World, name string) {
	script := &script.Script{Containers: []script.ContainerRule{{
		Match: script.ContainerMatch{Image: "crasher*"},
		Exit:  &script.ExitSpec{After: script.Duration(5 * time.Second), Code: 1},
	}}}
	n, err := w.AddNode(NodeOptions{Name: name, Script: script, Args: []string{
		"--pod-manifest-path=/etc/orch/manifests", "--manifest-url=http://manifests.sim/" + name,
	}})
	if err != nil {
		b.Fatal(err)
	}
	pod := func(name, image string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n  containers:\n  - {name: app, image: %q}\n", name, image)
	}
	for i := range 59 {
		n.WriteManifest(fmt.Sprintf("file-%d.yaml", i), []byte(pod("file-"+strconv.Itoa(i), fmt.Sprintf("app-%d:1", i%10))))
	}
	n.WriteManifest("crash.yaml", []byte(pod("crash", "crasher:1")))
	var list strings.Builder
	list.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	for i := range 50 {
		fmt.Fprintf(&list, "- apiVersion: v1\n  kind: Pod\n  metadata: {name: http-%d}\n  spec:\n    containers:\n    - {name: app, image: \"web-%d:1\"}\n", i, i%10)
	}
	n.Serve(200, []byte(list.String()))
}

// peakRSS is the process's peak resident set (VmHWM), in MiB; 0 where /proc does not say.
func peakRSS() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// The simulator's benchmarks run as a batch job: unless GOGC or GOMEMLIMIT is set (then the
// runtime keeps what they say), the garbage collector runs at batchGOGC under a soft memory limit
// of batchMemoryLimit or half the machine's memory, whichever is lower. A collection costs about
// the live heap's marking whatever the garbage, so a higher GOGC collects less often for a larger
// peak: reports/speed.md has the CPU it saves and the memory it costs.
const (
	batchGOGC        = 400
	batchMemoryLimit = 6 << 30
)

// batchGC sets the collector for a benchmark as above and restores the process's at its end; the
// function it returns reports the setting (after the benchmark's loop, which resets metrics).
func batchGC(b *testing.B) (report func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() { b.ReportMetric(0, "batch-gc") } // the environment's settings
	}
	limit := int64(batchMemoryLimit)
	if total := memTotal(); total > 0 {
		limit = min(limit, total/2)
	}
	percent := debug.SetGCPercent(batchGOGC)
	memLimit := debug.SetMemoryLimit(limit)
	b.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(memLimit)
	})
	return func() {
		b.ReportMetric(batchGOGC, "batch-gc")
		b.ReportMetric(float64(limit)/(1<<20), "memory-limit-MiB")
	}
}

// memTotal is the machine's memory (MemTotal) in bytes; 0 where /proc does not say.
func memTotal() int64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "MemTotal:" && f[2] == "kB" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// simulate runs nodes busy nodes for d of simulated time and reports the speed-up over real time.
func simulate(b *testing.B, nodes int, d time.Duration) {
	defer batchGC(b)()
	for b.Loop() {
		w, err := New(Options{Seed: 1, Keep: func(Entry) bool { return false }})
		if err != nil {
			b.Fatal(err)
		}
		for i := range nodes {
			busyNode(b, w, fmt.Sprintf("node-%03d", i))
		}
		start := time.Now()
		if err := w.RunUntil(d); err != nil {
			b.Fatal(err)
		}
		wall := time.Since(start)
		b.ReportMetric(d.Seconds()/wall.Seconds(), "sim-s/wall-s")
		b.ReportMetric(float64(w.Lines()), "trace-lines")
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(peakRSS(), "peak-RSS-MiB")
	b.ReportMetric(float64(ms.Sys)/(1<<20), "go-sys-MiB")
}

// One node, 110 pods, file and HTTP sources, a crash-looping container and an event storm, for 24
// simulated hours (SIM_HOURS overrides, for a shorter look).
func BenchmarkNodeDay(b *testing.B) {
	simulate(b, 1, hours(b, 24))
}

// 100 nodes of 110 pods each in one world for one simulated hour (SIM_HOURS overrides).
func BenchmarkHundredNodesHour(b *testing.B) {
	simulate(b, 100, hours(b, 1))
}

func hours(b *testing.B, def float64) time.Duration {
	if s := os.Getenv("SIM_HOURS"); s != "" {
		h, err := strconv.ParseFloat(s, 64)
		if err != nil {
			b.Fatalf("SIM_HOURS=%q: %v", s, err)
		}
		def = h
	}
	return time.Duration(def * float64(time.Hour))
}

// 1,000 empty nodes in API-server mode against the in-process API server for one simulated hour
// (SIM_HOURS overrides), default status and lease periods: wall time, peak heap in use (sampled at
// every simulated minute) and the API's requests per simulated second by verb and resource. With
// SIM_LIVE set, also the peak live heap: what a forced GC at every simulated minute leaves, the
// world's own memory apart from where the GC's cycle stood (reports/speed.md: the peak heap in use
// follows the GC's pacing, which the driver's use of the second core moves).
func BenchmarkThousandAPINodesHour(b *testing.B) {
	apiNodesHour(b, 1000)
}

// 10,000 such nodes (make bench-sim-10k; SIM_HOURS overrides the hour): the figures of 1,000, and
// the API server's load: its requests by verb, their total per simulated second, and with SIM_COST
// set its share of the CPU.
func BenchmarkTenThousandAPINodesHour(b *testing.B) {
	apiNodesHour(b, 10000)
}

func apiNodesHour(b *testing.B, nodes int) {
	defer batchGC(b)()
	d := hours(b, 1)
	for b.Loop() {
		w, err := New(Options{Seed: 1, APIServer: true, Keep: func(Entry) bool { return false }})
		if err != nil {
			b.Fatal(err)
		}
		for i := range nodes {
			if _, err := w.AddNode(NodeOptions{Name: fmt.Sprintf("node-%0*d", len(strconv.Itoa(nodes)), i), API: true}); err != nil {
				b.Fatal(err)
			}
		}
		var peak, live uint64
		var ms runtime.MemStats
		liveOn := os.Getenv("SIM_LIVE") != "" // its forced GCs are in the wall and CPU figures
		start := time.Now()
		c := startCost(b)
		for at := time.Duration(0); at < d; {
			at = min(at+time.Minute, d)
			if err := w.RunUntil(at); err != nil {
				b.Fatal(err)
			}
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			if liveOn {
				runtime.GC()
				runtime.ReadMemStats(&ms)
				live = max(live, ms.HeapAlloc)
			}
		}
		wall := time.Since(start)
		c.report(b, w.Lines(), d.Seconds()*float64(nodes))
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-inuse-MiB")
		if liveOn {
			b.ReportMetric(float64(live)/(1<<20), "peak-live-heap-MiB")
		}
		counts := w.APIRequestCounts()
		keys := make([]string, 0, len(counts))
		var total uint64
		for k, n := range counts {
			keys = append(keys, k)
			total += n
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.ReportMetric(float64(counts[k])/d.Seconds(), strings.ReplaceAll(k, " ", "-")+"/sim-s")
		}
		b.ReportMetric(float64(total)/d.Seconds(), "requests/sim-s")
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(peakRSS(), "peak-RSS-MiB")
}

// One API-server-mode node of 110 pods under memory and disk pressure for 24 simulated hours
// (SIM_HOURS overrides): 10 leakers grow 2Mi of memory a second and 10 writers 1Mi of writable
// layer a second on an 8Gi node with a 20Gi image filesystem 15Gi full, so the eviction manager
// meets memory.available and imagefs.available thresholds within minutes; every simulated hour a
// controller-like loop deletes the leakers and writers and creates them anew. Reports wall time,
// evictions and the trace's size; with SIM_COST set, how the CPU splits between the simulator and
// the production code it drives; with SIM_TRACE set, the whole trace is written to that file.
func BenchmarkNodeDayUnderPressure(b *testing.B) {
	defer batchGC(b)()
	d := hours(b, 24)
	for b.Loop() {
		evictions := 0
		dump := traceDump(b)
		w, err := New(Options{Seed: 1, APIServer: true, Keep: func(e Entry) bool {
			if e.Kind == KindEvent && strings.Contains(e.Text, "Warning Evicted") {
				evictions++
			}
			dump(e)
			return false
		}})
		if err != nil {
			b.Fatal(err)
		}
		mib := func(n float64) *script.Quantity { q := script.N(n * (1 << 20)); return &q }
		script := &script.Script{
			Node: script.NodeScript{ImageFs: &script.Filesystem{Capacity: mib(20 << 10), Used: mib(15 << 10)}},
			Containers: []script.ContainerRule{
				{Match: script.ContainerMatch{Image: "leaker*"}, Usage: &script.Usage{Memory: &script.Curve{Ramp: &script.Ramp{From: *mib(10), PerSecond: mib(2)}}}},
				{Match: script.ContainerMatch{Image: "writer*"}, Usage: &script.Usage{Disk: &script.Curve{Ramp: &script.Ramp{From: *mib(0), PerSecond: mib(1)}}}},
				{Match: script.ContainerMatch{Image: "app*"}, Usage: &script.Usage{Memory: &script.Curve{Constant: mib(20)}}},
			},
		}
		if _, err := w.AddNode(NodeOptions{Name: "node-a", API: true, Script: script, Args: []string{"--max-pods=110"}}); err != nil {
			b.Fatal(err)
		}
		pod := func(name, image string) *corev1.Pod {
			return &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: "app", Image: image}}},
			}
		}
		var churn []string
		for i := range 110 {
			name, image := fmt.Sprintf("app-%d", i), "app:1"
			switch {
			case i < 10:
				name, image = fmt.Sprintf("leaker-%d", i), "leaker:1"
				churn = append(churn, name)
			case i < 20:
				name, image = fmt.Sprintf("writer-%d", i), "writer:1"
				churn = append(churn, name)
			}
			if err := w.CreatePod(pod(name, image)); err != nil {
				b.Fatal(err)
			}
		}
		zero := int64(0)
		start := time.Now()
		c := startCost(b)
		for at := time.Duration(0); at < d; {
			at = min(at+time.Hour, d)
			if err := w.RunUntil(at); err != nil {
				b.Fatal(err)
			}
			for _, name := range churn {
				if err := w.DeletePod("default", name, &zero); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Advance(time.Minute); err != nil {
				b.Fatal(err)
			}
			at += time.Minute
			for _, name := range churn {
				image := "leaker:1"
				if strings.HasPrefix(name, "writer") {
					image = "writer:1"
				}
				if err := w.CreatePod(pod(name, image)); err != nil {
					b.Fatal(err)
				}
			}
		}
		wall := time.Since(start)
		c.report(b, w.Lines(), d.Seconds())
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(d.Seconds()/wall.Seconds(), "sim-s/wall-s")
		b.ReportMetric(float64(evictions), "evictions")
		b.ReportMetric(float64(w.Lines()), "trace-lines")
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
		dump(Entry{})
	}
	b.ReportMetric(peakRSS(), "peak-RSS-MiB")
}

// traceDump writes every entry of the run, one trace line each, to the file SIM_TRACE names (to
// compare a whole day's trace before and after a change that must not move it); without
// SIM_TRACE it does nothing. The zero Entry flushes and closes the file.
func traceDump(b *testing.B) func(Entry) {
	name := os.Getenv("SIM_TRACE")
	if name == "" {
		return func(Entry) {}
	}
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	out := bufio.NewWriter(f)
	return func(e Entry) {
		if e != (Entry{}) {
			out.WriteString(e.String() + "\n")
			return
		}
		if err := out.Flush(); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// 1,000 empty standalone nodes, one simulated second an op: the driver's looks at every node at
// every instant and each agent's relist through its fakecri, without an API server's requests (the
// part of BenchmarkThousandAPINodesHour that grows with the nodes but not with the requests).
func BenchmarkThousandEmptyNodesSecond(b *testing.B) {
	emptyNodesSecond(b, 1000)
}

// 10,000 such nodes: their structures no longer fit the processor's caches, so what a quiet
// node's second costs is mostly the cache lines it reads (BenchmarkTenThousandAPINodesHour's).
func BenchmarkTenThousandEmptyNodesSecond(b *testing.B) {
	emptyNodesSecond(b, 10000)
}

func emptyNodesSecond(b *testing.B, nodes int) {
	w, err := New(Options{Seed: 1, Keep: func(Entry) bool { return false }})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	for i := range nodes {
		if _, err := w.AddNode(NodeOptions{Name: fmt.Sprintf("node-%0*d", len(strconv.Itoa(nodes-1)), i)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Advance(time.Minute); err != nil { // past the agents' start
		b.Fatal(err)
	}
	cpu := processCPU(b)
	for b.Loop() {
		if err := w.Advance(time.Second); err != nil {
			b.Fatal(err)
		}
	}
	// CPU rather than wall time: the machine is shared, and a loaded one stretches wall time.
	b.ReportMetric(float64((processCPU(b)-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// processCPU is the CPU (user and system) the process has used (as the API server's benchmarks
// read it; test files of another package cannot be imported).
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
