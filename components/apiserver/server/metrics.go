package server

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewRegistry returns a registry for Config.Metrics holding the Go runtime and process metrics, for
// callers whose own metrics are served beside the server's. Every metric of Go's runtime/metrics is
// among them, as kube-apiserver serves them: go_sched_latencies_seconds (how long goroutines waited
// runnable before they ran), go_gc_pauses_seconds and the collector's share of the CPU
// (go_cpu_classes_gc_*) say where a request's time went before its handler ran, which the
// request's own timing cannot.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	goRuntime := collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll)
	reg.MustRegister(collectors.NewGoCollector(goRuntime), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}
