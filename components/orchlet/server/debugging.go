package server

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// debuggingPrefixes are the kubelet's debugging paths; without --enable-debugging-handlers they
// answer 405, as the kubelet's do.
var debuggingPrefixes = []string{
	"/run/", "/exec/", "/attach/", "/portForward/", "/containerLogs/", "/runningpods/", "/debug/pprof/", "/logs/",
}

func debuggingDisabled(mux *http.ServeMux) {
	for _, p := range debuggingPrefixes {
		mux.HandleFunc(p, func(w http.ResponseWriter, _ *http.Request) {
			writeText(w, http.StatusMethodNotAllowed, "Debug endpoints are disabled.")
		})
	}
}

// debuggingPaths installs the log and exec handlers. Exec answers the command's standard output in
// one response body; the streaming protocols (SPDY, WebSocket) of kubectl exec are not served.
func (h *handlers) debuggingPaths(mux *http.ServeMux) {
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", h.containerLogs)
	mux.HandleFunc("POST /exec/{namespace}/{pod}/{container}", h.exec)
}

func (h *handlers) containerLogs(w http.ResponseWriter, r *http.Request) {
	opts, err := logOptions(r.URL.Query())
	if err != nil {
		writeText(w, http.StatusBadRequest, err.Error())
		return
	}
	out := &responseWriter{w: w, flush: opts.Follow}
	err = h.deps.Logs.ContainerLogs(r.Context(), r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container"), opts, out)
	if err != nil && !out.wrote {
		writeError(w, err)
	}
}

func (h *handlers) exec(w http.ResponseWriter, r *http.Request) {
	cmd := r.URL.Query()["command"]
	if len(cmd) == 0 {
		writeText(w, http.StatusBadRequest, "you must specify at least 1 command")
		return
	}
	stdout, err := h.deps.Exec.Exec(r.Context(), r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container"), cmd)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	w.Write(stdout)
}

func writeError(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrNotFound) {
		writeText(w, http.StatusNotFound, err.Error())
		return
	}
	writeText(w, http.StatusInternalServerError, err.Error())
}

// logOptions reads the query of a log request the way the kubelet decodes it into PodLogOptions,
// with the API's validation: counts positive (tailLines may be 0), and at most one of sinceSeconds
// and sinceTime.
func logOptions(q url.Values) (*corev1.PodLogOptions, error) {
	opts := &corev1.PodLogOptions{}
	var errs []error
	boolParam := func(name string, dst *bool) {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %q is not a boolean", name, v))
			}
			*dst = b
		}
	}
	intParam := func(name string, min int64) *int64 {
		v := q.Get(name)
		if v == "" {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < min {
			errs = append(errs, fmt.Errorf("%s: %q must be an integer of at least %d", name, v, min))
			return nil
		}
		return &n
	}
	boolParam("follow", &opts.Follow)
	boolParam("previous", &opts.Previous)
	boolParam("timestamps", &opts.Timestamps)
	opts.TailLines = intParam("tailLines", 0)
	opts.LimitBytes = intParam("limitBytes", 1)
	opts.SinceSeconds = intParam("sinceSeconds", 1)
	if v := q.Get("sinceTime"); v != "" {
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			errs = append(errs, fmt.Errorf("sinceTime: %q is not an RFC 3339 time", v))
		} else {
			opts.SinceTime = &metav1.Time{Time: t}
		}
	}
	if opts.SinceSeconds != nil && opts.SinceTime != nil {
		errs = append(errs, errors.New("at most one of sinceTime or sinceSeconds may be specified"))
	}
	return opts, errors.Join(errs...)
}

// responseWriter notes whether the body has begun, so that an error before the first byte can
// still become the status, and flushes each write when the log is followed.
type responseWriter struct {
	w     http.ResponseWriter
	flush bool
	wrote bool
}

var _ io.Writer = (*responseWriter)(nil)

func (rw *responseWriter) Write(p []byte) (int, error) {
	if !rw.wrote {
		rw.wrote = true
		rw.w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	n, err := rw.w.Write(p)
	if err == nil && rw.flush {
		err = http.NewResponseController(rw.w).Flush()
	}
	return n, err
}
