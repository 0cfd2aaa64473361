package server

import (
	"net/http"
	"net/http/pprof"
)

// profilingRoutes serve Go's profiles under /debug/pprof/ as kube-apiserver's --profiling does
// (k8s.io/apiserver's routes.Profiling): behind authentication and authorization like every path,
// a non-resource URL that RBAC grants by nonResourceURLs (cluster-admin's "*"; no other bootstrap
// role names it). As Kubernetes', the command line is not served: Index answers it 404.
func profilingRoutes(mux *plainMux) {
	mux.Handle("/debug/pprof", http.RedirectHandler("/debug/pprof/", http.StatusFound))
	mux.HandleFunc("/debug/pprof/", pprof.Index) // the named profiles: heap, goroutine, allocs, block, mutex...
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}
