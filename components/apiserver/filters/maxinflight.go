package filters

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/authn"
)

// Limits are the load limits of Kubernetes' generic API server (--max-requests-inflight,
// --max-mutating-requests-inflight, --request-timeout). Zero disables each.
type Limits struct {
	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int
	RequestTimeout              time.Duration
}

// systemPrivilegedGroup always gets an answer, as in Kubernetes: a super-admin must be able to
// repair a server that is overloaded.
const systemPrivilegedGroup = "system:masters"

// exempt tells the requests no limit applies to: the long-running ones, which live as long as the
// client keeps them (watches, and as Kubernetes counts them the streams and proxies through a
// node: pods' log, exec, attach and portforward, nodes' proxy), and the health checks, which must
// answer most of all when the server is busy.
func exempt(r *http.Request) bool {
	switch r.URL.Path {
	case "/healthz", "/livez", "/readyz":
		return true
	}
	a := requestAttributes(r)
	switch a.Subresource {
	case "log", "exec", "attach", "portforward", "proxy":
		return a.Resource == "pods" || a.Resource == "nodes"
	}
	return a.Verb == "watch"
}

// inFlight caps concurrent requests, read-only and mutating apart, and answers the ones over the cap
// with 429 and Retry-After at once, as Kubernetes' max-in-flight filter does.
type inFlight struct {
	readOnly, mutating chan struct{}
	bodies             *semaphore.Weighted // bodies read ahead of their place in flight, in bytes
	current            *prometheus.GaugeVec
	terminations       *prometheus.CounterVec
}

// WithMaxInFlightLimit is Kubernetes' max-in-flight filter over next, with l's caps; its gauge and
// counter are registered on reg.
func WithMaxInFlightLimit(next http.Handler, l Limits, reg prometheus.Registerer) http.Handler {
	return newInFlight(l, reg).wrap(next)
}

func newInFlight(l Limits, reg prometheus.Registerer) *inFlight {
	f := &inFlight{
		bodies: semaphore.NewWeighted(bodyBudget),
		current: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_current_inflight_requests",
			Help: "Maximal number of currently used inflight request limit of this apiserver per request kind in last second.",
		}, []string{"request_kind"}),
		terminations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_terminations_total",
			Help: "Number of requests which apiserver terminated in self-defense.",
		}, []string{"verb", "group", "version", "resource", "code"}),
	}
	if l.MaxRequestsInFlight > 0 {
		f.readOnly = make(chan struct{}, l.MaxRequestsInFlight)
	}
	if l.MaxMutatingRequestsInFlight > 0 {
		f.mutating = make(chan struct{}, l.MaxMutatingRequestsInFlight)
	}
	reg.MustRegister(f.current, f.terminations)
	return f
}

// nonMutatingVerbs are Kubernetes' read-only verbs; every other verb counts as mutating.
var nonMutatingVerbs = map[string]bool{"get": true, "list": true, "watch": true, "head": true, "options": true}

func (f *inFlight) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if exempt(r) {
			next.ServeHTTP(w, r)
			return
		}
		attrs := requestAttributes(r)
		slots, kind := f.readOnly, "readOnly"
		if !nonMutatingVerbs[attrs.Verb] {
			slots, kind = f.mutating, "mutating"
		}
		if slots == nil {
			next.ServeHTTP(w, r)
			return
		}
		if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
			release, err := f.readBody(r)
			if err != nil {
				endpoints.WriteError(w, r, apierrors.NewBadRequest("reading the request body: "+err.Error()))
				return
			}
			defer release()
		}
		select {
		case slots <- struct{}{}:
			f.current.WithLabelValues(kind).Set(float64(len(slots)))
			defer func() {
				<-slots
				f.current.WithLabelValues(kind).Set(float64(len(slots)))
			}()
			next.ServeHTTP(w, r)
		default:
			if user, ok := authn.UserFrom(r.Context()); ok {
				for _, g := range user.Groups {
					if g == systemPrivilegedGroup {
						next.ServeHTTP(w, r)
						return
					}
				}
			}
			f.terminations.WithLabelValues(attrs.Verb, attrs.APIGroup, attrs.APIVersion, attrs.Resource, "429").Inc()
			// Kubernetes answers in plain text here, with the header clients back off by.
			w.Header().Set("Retry-After", "1")
			http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
		}
	})
}

// firstBodyBuffer is the buffer a body is first read into, larger than most objects' bodies.
const firstBodyBuffer = 4 << 10

// bodyBudget bounds the request bodies held in memory while they arrive, ahead of their place in
// flight: 256 MiB, some eighty bodies at Kubernetes' 3 MiB limit.
const bodyBudget = 256 << 20

// readBody reads a request's body (up to the decoder's limit, one byte more so that it still
// refuses a larger one) before the request takes a place in flight: a client that never finishes
// its body then holds only its connection and the bytes it sent, not one of the places every
// writer shares. The bytes are held against bodyBudget; release gives them back once the request
// is served. A body that never ends is ended by the request timeout around this filter.
func (f *inFlight) readBody(r *http.Request) (release func(), err error) {
	var held int64
	release = func() { f.bodies.Release(held) }
	// The buffer grows as bytes arrive, doubling, to at most the announced length and the one
	// more byte that reads the end: a client that announces a large body and sends little holds
	// little memory, as it holds little of the budget. (Made at the announced length, 200 clients
	// announcing a megabyte and sending 100 bytes held 200 MB outside the budget.)
	limit := int64(endpoints.MaxRequestBodyBytes + 1)
	if r.ContentLength > 0 && r.ContentLength <= endpoints.MaxRequestBodyBytes {
		limit = r.ContentLength + 1
	}
	buf := make([]byte, 0, min(firstBodyBuffer, limit))
	body := io.LimitReader(r.Body, endpoints.MaxRequestBodyBytes+1)
	for {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), max(min(2*int64(cap(buf)), limit), int64(cap(buf))+1))
			copy(grown, buf)
			buf = grown
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		if n > 0 {
			// The bytes are counted as they arrive, not as announced.
			if err := f.bodies.Acquire(r.Context(), int64(n)); err != nil {
				release()
				return nil, err
			}
			held += int64(n)
			buf = buf[:len(buf)+n]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			release()
			return nil, err
		}
	}
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(buf), r.Body), r.Body}
	return release, nil
}
