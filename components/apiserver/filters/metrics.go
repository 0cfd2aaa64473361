package filters

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"sync"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
)

// requestMetrics carry Kubernetes' apiserver metric names, so existing dashboards read them.
type requestMetrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec

	mu     sync.RWMutex
	series map[seriesKey]series // the vectors' children, by their labels
}

// seriesKey is a request's labels.
type seriesKey struct {
	verb, group, version, resource string
	code                           int
}

// series is the counter and the histogram of one request's labels.
type series struct {
	total    prometheus.Counter
	duration prometheus.Observer
}

// WithRequestMetrics counts and times every request next answers, on clk, in metrics registered on
// reg.
func WithRequestMetrics(next http.Handler, clk clock.Clock, reg prometheus.Registerer) http.Handler {
	return newRequestMetrics(reg).wrap(clk, next)
}

func newRequestMetrics(reg prometheus.Registerer) *requestMetrics {
	m := &requestMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Counter of apiserver requests broken out for each verb, API group, version, resource and HTTP response code.",
		}, []string{"verb", "group", "version", "resource", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Response latency distribution in seconds for each verb, API group, version and resource.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 5, 10, 30, 60},
		}, []string{"verb", "group", "version", "resource"}),
		series: map[seriesKey]series{},
	}
	reg.MustRegister(m.total, m.duration)
	return m
}

// statusRecorder remembers the response code and passes flushes through for watch streams.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Hijack hands an upgraded stream (exec, attach, port-forward, proxy) its connection; the request
// is recorded as 101 Switching Protocols.
func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err == nil && s.code == 0 {
		s.code = http.StatusSwitchingProtocols
	}
	return conn, rw, err
}

func (m *requestMetrics) wrap(clk clock.Clock, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := clk.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		a := requestAttributes(r)
		verb := a.Verb
		if !a.ResourceRequest {
			verb = r.Method
		}
		if rec.code == 0 {
			rec.code = http.StatusOK
		}
		s := m.seriesOf(seriesKey{verb, a.APIGroup, a.APIVersion, a.Resource, rec.code})
		s.total.Inc()
		s.duration.Observe(clk.Since(start).Seconds())
	})
}

// seriesOf is the counter and histogram of k, looked up in the vectors once for each labels:
// the vectors validated and hashed every label at every request, twice. The vectors' children
// are never deleted, so the ones kept stay theirs.
func (m *requestMetrics) seriesOf(k seriesKey) series {
	m.mu.RLock()
	s, ok := m.series[k]
	m.mu.RUnlock()
	if ok {
		return s
	}
	s = series{
		total:    m.total.WithLabelValues(k.verb, k.group, k.version, k.resource, codeLabel(k.code)),
		duration: m.duration.WithLabelValues(k.verb, k.group, k.version, k.resource),
	}
	m.mu.Lock()
	m.series[k] = s
	m.mu.Unlock()
	return s
}

// codeLabels are the HTTP codes as label values, made once: strconv.Itoa made one at every
// request.
var codeLabels = func() (labels [600]string) {
	for code := range labels {
		labels[code] = strconv.Itoa(code)
	}
	return labels
}()

// codeLabel is strconv.Itoa(code).
func codeLabel(code int) string {
	if code >= 0 && code < len(codeLabels) {
		return codeLabels[code]
	}
	return strconv.Itoa(code)
}
