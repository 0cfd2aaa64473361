package tracingtest

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// Span is a received span, its ids in hex as in a W3C traceparent.
type Span struct {
	Service      string
	Name         string
	Kind         tracepb.Span_SpanKind
	TraceID      string
	SpanID       string
	ParentSpanID string // "" for a root span
	Attributes   map[string]string
	Links        []Link
	Error        bool // the span's status is Error
}

// Link is a span link: the span another one refers to without being its child.
type Link struct{ TraceID, SpanID string }

// Collector receives spans over OTLP gRPC.
type Collector struct {
	collectortrace.UnimplementedTraceServiceServer
	addr   string
	server *grpc.Server

	mu      sync.Mutex
	spans   []Span
	changed chan struct{} // closed and replaced on every export
}

// Start serves a collector on addr ("127.0.0.1:0" for any free port) until the test ends.
func Start(t testing.TB, addr string) *Collector {
	t.Helper()
	c, err := New(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	return c
}

// New serves a collector on addr until Stop.
func New(addr string) (*Collector, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("collector on %s: %w", addr, err)
	}
	c := &Collector{addr: l.Addr().String(), changed: make(chan struct{}), server: grpc.NewServer()}
	collectortrace.RegisterTraceServiceServer(c.server, c)
	go func() { _ = c.server.Serve(l) }()
	return c, nil
}

// Stop closes the listener and every connection.
func (c *Collector) Stop() { c.server.Stop() }

// Endpoint is the host:port a TracingConfiguration names to report here.
func (c *Collector) Endpoint() string { return c.addr }

// Export keeps the spans of one request.
func (c *Collector) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		service := attributes(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				span := Span{
					Service: service, Name: s.GetName(), Kind: s.GetKind(),
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()),
					Attributes:   attributes(s.GetAttributes()),
					Error:        s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
				}
				for _, l := range s.GetLinks() {
					span.Links = append(span.Links, Link{TraceID: hex.EncodeToString(l.GetTraceId()), SpanID: hex.EncodeToString(l.GetSpanId())})
				}
				got = append(got, span)
			}
		}
	}
	c.mu.Lock()
	c.spans = append(c.spans, got...)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// Spans returns every span received so far, in the order received.
func (c *Collector) Spans() []Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Span(nil), c.spans...)
}

// Await waits until done holds for the spans received, or ctx ends.
func (c *Collector) Await(ctx context.Context, done func([]Span) bool) ([]Span, error) {
	for {
		c.mu.Lock()
		spans, changed := append([]Span(nil), c.spans...), c.changed
		c.mu.Unlock()
		if done(spans) {
			return spans, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return spans, fmt.Errorf("collector: %d spans received, not the ones awaited: %w", len(spans), ctx.Err())
		}
	}
}

func attributes(kvs []*commonpb.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = strconv.FormatBool(v.BoolValue)
		default:
			out[kv.GetKey()] = kv.GetValue().String()
		}
	}
	return out
}
