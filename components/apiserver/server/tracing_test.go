package server

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	apiv1 "orch.io/orch/components/apis/apiserver/v1"
	"orch.io/orch/components/apiserver/tracing"
	"orch.io/orch/components/apiserver/tracing/tracingtest"
	"orch.io/orch/components/authn"
)

// tracedEnv is a server exporting its spans to an in-process collector; ids of W3C parents the
// tests send.
type tracedEnv struct {
	*env
	collector *tracingtest.Collector
	provider  *sdktrace.TracerProvider
}

const (
	parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	parentSpan  = "00f067aa0ba902b7"
)

func traceparent(sampled bool) string {
	flags := "00"
	if sampled {
		flags = "01"
	}
	return "00-" + parentTrace + "-" + parentSpan + "-" + flags
}

// newTracedEnv serves with a TracingConfiguration's provider at the given sampling rate (nil for
// none), for three users: admin (system:masters), monitor (system:monitoring) and alice.
func newTracedEnv(t *testing.T, rate *int32) *tracedEnv {
	t.Helper()
	collector := tracingtest.Start(t, "127.0.0.1:0")
	endpoint := collector.Endpoint()
	tp, err := tracing.NewProvider(context.Background(), &apiv1.TracingConfiguration{ComponentTracingConfiguration: apiv1.ComponentTracingConfiguration{Endpoint: &endpoint, SamplingRatePerMillion: rate}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	path := filepath.Join(t.TempDir(), "tokens.csv")
	tokens := "admin-token,admin,u-0,system:masters\nmonitor-token,monitor,u-1,system:monitoring\nalice-token,alice,u-2\n"
	if err := os.WriteFile(path, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := authn.NewTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *Config) {
		c.TracerProvider = tp
		c.Authenticator = authn.Union(tf, authn.Anonymous())
	})
	return &tracedEnv{env: e, collector: collector, provider: tp}
}

// flush exports every span ended so far and returns what the collector holds.
func (e *tracedEnv) flush() []tracingtest.Span {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.provider.ForceFlush(ctx); err != nil {
		e.t.Fatal(err)
	}
	return e.collector.Spans()
}

// serverSpan finds the one request span named name whose attributes include want.
func serverSpan(t *testing.T, spans []tracingtest.Span, name string, want map[string]string) tracingtest.Span {
	t.Helper()
	var found []tracingtest.Span
	for _, s := range spans {
		if s.Name == name && s.Kind == tracepb.Span_SPAN_KIND_SERVER && hasAttributes(s, want) {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d server spans %q with %v, want 1; spans: %+v", len(found), name, want, spans)
	}
	if found[0].Service != "apiserver" {
		t.Fatalf("span of service %q, want apiserver", found[0].Service)
	}
	return found[0]
}

func hasAttributes(s tracingtest.Span, want map[string]string) bool {
	for k, v := range want {
		if s.Attributes[k] != v {
			return false
		}
	}
	return true
}

// children are the spans whose parent is s.
func children(spans []tracingtest.Span, s tracingtest.Span) []tracingtest.Span {
	var out []tracingtest.Span
	for _, c := range spans {
		if c.TraceID == s.TraceID && c.ParentSpanID == s.SpanID {
			out = append(out, c)
		}
	}
	return out
}

// expectChild asserts s has a storage span named name with the given attributes.
func expectChild(t *testing.T, spans []tracingtest.Span, s tracingtest.Span, name string, want map[string]string) tracingtest.Span {
	t.Helper()
	for _, c := range children(spans, s) {
		if c.Name == name && c.Kind == tracepb.Span_SPAN_KIND_CLIENT && hasAttributes(c, want) {
			return c
		}
	}
	t.Fatalf("%q has no child %q with %v; its children: %+v", s.Name, name, want, children(spans, s))
	return tracingtest.Span{}
}

func rate(r int32) *int32 { return &r }

// Every request is a span named after its route, with verb, resource and status code, and its
// storage calls are child spans.
func TestTracingRequestAndStorageSpans(t *testing.T) {
	e := newTracedEnv(t, rate(1000000))
	e.create("traced")
	e.do("GET", eventsPath+"/traced", nil)
	e.do("GET", eventsPath+"/missing", nil)
	e.do("GET", "/healthz", nil)
	spans := e.flush()

	create := serverSpan(t, spans, "POST /apis/events.orch.io/v1/namespaces/{:namespace}/events", map[string]string{
		"verb": "create", "resource": "events", "group": "events.orch.io", "version": "v1", "namespace": "default",
		"http.request.method": "POST", "http.route": "/apis/events.orch.io/v1/namespaces/{:namespace}/events",
		"url.path": eventsPath, "http.response.status_code": "201",
	})
	if create.ParentSpanID != "" || len(create.Links) != 0 {
		t.Fatalf("a request without traceparent: parent %q links %v, want a root span", create.ParentSpanID, create.Links)
	}
	expectChild(t, spans, create, "storage.Create", map[string]string{"key": "/registry/events.orch.io/events/default/traced"})

	get := serverSpan(t, spans, "GET /apis/events.orch.io/v1/namespaces/{:namespace}/events/{:name}", map[string]string{
		"verb": "get", "url.path": eventsPath + "/traced", "http.response.status_code": "200",
	})
	expectChild(t, spans, get, "storage.Get", map[string]string{"key": "/registry/events.orch.io/events/default/traced"})
	missing := serverSpan(t, spans, "GET /apis/events.orch.io/v1/namespaces/{:namespace}/events/{:name}", map[string]string{
		"url.path": eventsPath + "/missing", "http.response.status_code": "404",
	})
	if c := expectChild(t, spans, missing, "storage.Get", nil); c.Error || missing.Error {
		t.Fatal("a key not found marked the spans as errors; it is an answer")
	}
	health := serverSpan(t, spans, "GET", map[string]string{"url.path": "/healthz", "verb": "get", "http.response.status_code": "200"})
	// The etcd probe the check sent runs in the background, a child of the request all the same.
	eventually(t, func() bool {
		for _, c := range children(e.flush(), health) {
			if c.Name == "storage.Revision" && c.Kind == tracepb.Span_SPAN_KIND_CLIENT {
				return true
			}
		}
		return false
	})
}

// A traceparent from system:masters or system:monitoring makes the request span its child; from
// anyone else the request starts a new trace that links to it (Kubernetes' rule).
func TestTracingTraceparent(t *testing.T) {
	e := newTracedEnv(t, rate(1000000))
	for _, user := range []string{"admin", "monitor", "alice"} {
		e.do("GET", eventsPath, nil, "Authorization", "Bearer "+user+"-token", "traceparent", traceparent(true))
	}
	spans := e.flush()
	var inClientTrace, linked int
	for _, s := range spans {
		if s.Kind != tracepb.Span_SPAN_KIND_SERVER {
			continue
		}
		if s.TraceID == parentTrace {
			inClientTrace++
			if s.ParentSpanID != parentSpan {
				t.Fatalf("request span in the client's trace with parent %q, want %q", s.ParentSpanID, parentSpan)
			}
		} else if len(s.Links) == 1 && s.Links[0] == (tracingtest.Link{TraceID: parentTrace, SpanID: parentSpan}) && s.ParentSpanID == "" {
			linked++
		}
	}
	if inClientTrace != 2 || linked != 1 {
		t.Fatalf("%d request spans continue the client's trace (want 2: admin, monitor), %d start their own linked to it (want 1: alice); spans %+v", inClientTrace, linked, spans)
	}
}

// Without a rate, or with 0, nothing is sampled unless a trusted client's parent is: then the
// request and its storage calls are exported in the client's trace, and nothing else is.
func TestTracingParentBasedNeverSample(t *testing.T) {
	for _, tt := range []struct {
		name string
		rate *int32
	}{{"no rate", nil}, {"rate 0", rate(0)}} {
		t.Run(tt.name, func(t *testing.T) {
			e := newTracedEnv(t, tt.rate)
			e.create("unsampled")
			e.do("GET", eventsPath, nil, "Authorization", "Bearer admin-token", "traceparent", traceparent(false))
			e.do("GET", eventsPath, nil, "Authorization", "Bearer alice-token", "traceparent", traceparent(true))
			if spans := e.flush(); len(spans) != 0 {
				t.Fatalf("%d spans exported without a sampled trusted parent: %+v", len(spans), spans)
			}
			r := e.do("POST", eventsPath, sample("sampled"), "Authorization", "Bearer admin-token", "traceparent", traceparent(true))
			if r.code != 201 {
				t.Fatalf("create: %d %s", r.code, r.body)
			}
			spans := e.flush()
			for _, s := range spans {
				if s.TraceID != parentTrace {
					t.Fatalf("span %q outside the sampled trace: %+v", s.Name, s)
				}
			}
			create := serverSpan(t, spans, "POST /apis/events.orch.io/v1/namespaces/{:namespace}/events", map[string]string{"http.response.status_code": "201"})
			if create.ParentSpanID != parentSpan {
				t.Fatalf("request span parent %q, want the client's %q", create.ParentSpanID, parentSpan)
			}
			expectChild(t, spans, create, "storage.Create", map[string]string{"key": "/registry/events.orch.io/events/default/sampled"})
		})
	}
}

// Requests that are refused before they are authorized are not traced, as in Kubernetes, where
// tracing follows authorization.
func TestTracingStartsAfterAuthentication(t *testing.T) {
	e := newTracedEnv(t, rate(1000000))
	if r := e.do("GET", eventsPath, nil, "Authorization", "Bearer wrong"); r.code != 401 {
		t.Fatalf("unknown token: %d", r.code)
	}
	for _, s := range e.flush() {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER && strings.HasPrefix(s.Name, "GET") {
			t.Fatalf("a 401 was traced: %+v", s)
		}
	}
}
