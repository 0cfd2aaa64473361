package app_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"k8s.io/client-go/rest"

	"orch.io/orch/components/apiserver/app"
	"orch.io/orch/components/apiserver/tracing/tracingtest"
)

// --tracing-config-file exports a span per request, with its etcd calls as children, to the
// file's collector; stopping the server flushes the last spans.
func TestTracingConfigFile(t *testing.T) {
	collector := tracingtest.Start(t, "127.0.0.1:0")
	file := filepath.Join(t.TempDir(), "tracing.yaml")
	config := fmt.Sprintf("apiVersion: apiserver.config.orch.io/v1\nkind: TracingConfiguration\nendpoint: %s\nsamplingRatePerMillion: 1000000\n", collector.Endpoint())
	if err := os.WriteFile(file, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(o *app.Options) { o.TracingConfigFile = file })
	client, err := rest.HTTPClientFor(s.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	if code, _, body := createEvent(t, client, s, "traced"); code != http.StatusCreated {
		t.Fatalf("create: %d %s", code, body)
	}
	if _, err := s.stop(); err != nil {
		t.Fatal(err)
	}
	spans := collector.Spans()
	for _, req := range spans {
		if req.Name != "POST /apis/events.orch.io/v1/namespaces/{:namespace}/events" || req.Kind != tracepb.Span_SPAN_KIND_SERVER || req.Attributes["http.response.status_code"] != "201" {
			continue
		}
		for _, c := range spans {
			if c.TraceID == req.TraceID && c.ParentSpanID == req.SpanID && c.Name == "storage.Create" && c.Attributes["key"] == "/registry/events.orch.io/events/default/traced" {
				return
			}
		}
		t.Fatalf("the create's span has no storage.Create child; spans %+v", spans)
	}
	t.Fatalf("no span of the create among %d: %+v", len(spans), spans)
}
