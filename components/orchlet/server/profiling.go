package server

import (
	"net/http"
	"net/http/pprof"
	"runtime"

	"k8s.io/klog/v2"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

// profilingPaths are the kubelet's profiling handler (InstallProfilingHandler): Go's pprof under
// /debug/pprof/, served beside the debugging handlers as the kubelet serves it.
func profilingPaths(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index) // the named profiles: heap, goroutine, block...
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}

// contentionProfiling turns block profiling on for --contention-profiling when profiling is served
// (the kubelet's runtime.SetBlockProfileRate(1)); otherwise it says the option does nothing.
func contentionProfiling(cfg *v1beta1.OrchletConfiguration) {
	if !cfg.EnableContentionProfiling {
		return
	}
	if !cfg.EnableServer || !cfg.EnableDebuggingHandlers {
		klog.InfoS("--contention-profiling has no effect: profiling is served only by the HTTPS server with --enable-debugging-handlers")
		return
	}
	runtime.SetBlockProfileRate(1)
}
