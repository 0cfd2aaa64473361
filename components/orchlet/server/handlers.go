package server

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// handlers serves the paths of all three servers from the agent's dependencies.
type handlers struct {
	deps Deps
	// idle is --streaming-connection-idle-timeout, applied to the proxied streams too.
	idle time.Duration
}

// readPaths installs the paths the HTTPS and read-only servers share.
func (h *handlers) readPaths(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /pods", h.pods)
	mux.HandleFunc("GET /stats/summary", h.summary)
	mux.Handle("GET /metrics", promhttp.HandlerFor(h.deps.Metrics, promhttp.HandlerOpts{}))
}

// secureMux is the HTTPS server's: the read paths, /configz and the debugging paths.
func (h *handlers) secureMux(debugging bool) *http.ServeMux {
	mux := http.NewServeMux()
	h.readPaths(mux)
	mux.HandleFunc("GET /configz", h.configz)
	if debugging {
		h.debuggingPaths(mux)
		profilingPaths(mux)
	} else {
		debuggingDisabled(mux)
	}
	return mux
}

func (h *handlers) readOnlyMux() *http.ServeMux {
	mux := http.NewServeMux()
	h.readPaths(mux)
	return mux
}

func (h *handlers) healthzMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", healthz)
	return mux
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	writeText(w, http.StatusOK, "ok")
}

// pods answers a v1 PodList of the pods the agent runs.
func (h *handlers) pods(w http.ResponseWriter, _ *http.Request) {
	items := h.deps.Pods.Pods()
	if items == nil {
		items = []corev1.Pod{}
	}
	writeJSON(w, corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: items})
}

func (h *handlers) summary(w http.ResponseWriter, r *http.Request) {
	summary, err := h.deps.Stats.Summary(r.Context())
	if err != nil {
		writeText(w, http.StatusInternalServerError, "Internal Error: failed to get stats summary: "+err.Error())
		return
	}
	if summary.Pods == nil {
		summary.Pods = []PodStats{}
	}
	writeJSON(w, summary)
}

// configz answers the effective configuration under the key "orchletconfig", as the kubelet
// answers under "kubeletconfig".
func (h *handlers) configz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"orchletconfig": h.deps.Configz()})
}

func writeText(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write([]byte(text))
}

func writeJSON(w http.ResponseWriter, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		writeText(w, http.StatusInternalServerError, "Internal Error: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(data)
}
