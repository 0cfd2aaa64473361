package server

import (
	"errors"
	"fmt"
	"io"
	"maps"
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

// debuggingPaths installs the log handler and the streaming ones (exec, attach, port-forward, run).
func (h *handlers) debuggingPaths(mux *http.ServeMux) {
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", h.containerLogs)
	h.streamPaths(mux)
}

func (h *handlers) containerLogs(w http.ResponseWriter, r *http.Request) {
	opts, err := logOptions(r.URL.Query())
	if err != nil {
		writeText(w, http.StatusBadRequest, err.Error())
		return
	}
	// As the kubelet: one stream of the two only with the gate; "All" is both, and the default.
	if opts.Stream != nil && *opts.Stream != corev1.LogStreamAll && !h.deps.Gates.Enabled(splitStreamsGate) {
		writeText(w, http.StatusBadRequest, fmt.Sprintf("unable to return the given log stream: %q. Please enable %s feature gate in orchlet", *opts.Stream, splitStreamsGate))
		return
	}
	out := &responseWriter{w: w, flush: opts.Follow}
	err = h.deps.Logs.ContainerLogs(r.Context(), r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container"), opts, out)
	if err != nil && !out.wrote {
		writeError(w, err)
	}
}

// splitStreamsGate lets a log request ask for standard output or standard error alone.
const splitStreamsGate = "PodLogsQuerySplitStreams"

func writeError(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrNotFound) {
		writeText(w, http.StatusNotFound, err.Error())
		return
	}
	writeText(w, http.StatusInternalServerError, err.Error())
}

// logOptions reads the query of a log request the way the kubelet decodes it into PodLogOptions,
// with the API's validation: counts positive (tailLines may be 0), at most one of sinceSeconds
// and sinceTime, a stream of All, Stdout or Stderr and only All with tailLines. The legacy tail
// parameter stands for tailLines ("all": every line), as the kubelet reads it.
func logOptions(q url.Values) (*corev1.PodLogOptions, error) {
	opts := &corev1.PodLogOptions{}
	if tail := q.Get("tail"); tail != "" {
		q = maps.Clone(q)
		q.Del("tailLines")
		if tail != "all" {
			q.Set("tailLines", tail)
		}
	}
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
	if q.Has("stream") {
		stream := q.Get("stream")
		switch stream {
		case corev1.LogStreamAll, corev1.LogStreamStdout, corev1.LogStreamStderr:
			opts.Stream = &stream
		default:
			errs = append(errs, fmt.Errorf("stream: Unsupported value: %q: supported values: %q, %q, %q", stream, corev1.LogStreamAll, corev1.LogStreamStdout, corev1.LogStreamStderr))
		}
		if opts.Stream != nil && stream != corev1.LogStreamAll && opts.TailLines != nil {
			errs = append(errs, errors.New("tailLines: Forbidden: tailLines and specific stream are mutually exclusive for now"))
		}
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
