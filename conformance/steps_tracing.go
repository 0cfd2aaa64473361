package conformance

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"orch.io/orch/components/apiserver/tracing/tracingtest"
)

// collectorBindTimeout bounds the wait for a fixed collector port (the default 4317) that another
// test of the same run holds.
const collectorBindTimeout = time.Minute

func tracingSteps() []StepDef {
	return []StepDef{
		{`^an OTLP collector is listening$`, func(w *World) any { return func() error { return w.startCollector("127.0.0.1:0") } }},
		{`^an OTLP collector is listening on "([^"]*)"$`, func(w *World) any { return w.startCollector }},
		{`^the administrator requests "([^"]*)" with traceparent "([^"]*)"$`, func(w *World) any { return w.requestWithTraceparent }},
		{`^the API server is stopped$`, func(w *World) any { return w.stopServer }},
		{`^the collector received a request span "([^"]*)"$`, func(w *World) any { return w.receivedRequestSpan }},
		{`^the collector received a request span "([^"]*)" in trace "([^"]*)", child of span "([^"]*)"$`, func(w *World) any { return w.receivedChildSpan }},
		{`^every span the collector received is in trace "([^"]*)"$`, func(w *World) any { return w.allSpansInTrace }},
	}
}

// startCollector serves the OTLP trace service on addr; {collector} in the scenario's
// configuration stands for its address.
func (w *World) startCollector(addr string) error {
	deadline := time.Now().Add(collectorBindTimeout)
	for {
		c, err := tracingtest.New(addr)
		if err == nil {
			w.collector = c
			w.cleanup = append(w.cleanup, c.Stop)
			return nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (w *World) requestWithTraceparent(path, traceparent string) error {
	if w.server == nil {
		return fmt.Errorf("no API server of the scenario is running: %v", w.result)
	}
	req, err := http.NewRequest(http.MethodGet, w.server.BaseURL+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+w.t.Profile.APIServer.Token)
	req.Header.Set("traceparent", traceparent)
	resp, err := w.server.Client.Do(req)
	if err != nil {
		return err
	}
	body, _ := drain(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s as the administrator: %d %s", path, resp.StatusCode, body)
	}
	return nil
}

// stopServer stops the scenario's server the way an operator does; it exports its last spans
// before it exits.
func (w *World) stopServer() error {
	if w.server == nil {
		return fmt.Errorf("no API server of the scenario is running: %v", w.result)
	}
	w.server.Stop()
	w.server = nil
	return nil
}

func (w *World) spans() ([]tracingtest.Span, error) {
	if w.collector == nil {
		return nil, errors.New("no collector: start with \"an OTLP collector is listening\"")
	}
	return w.collector.Spans(), nil
}

func describe(spans []tracingtest.Span) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "\n  %s %q trace %s span %s parent %q", s.Kind, s.Name, s.TraceID, s.SpanID, s.ParentSpanID)
	}
	return b.String()
}

func (w *World) findRequestSpan(name string, match func(tracingtest.Span) bool) error {
	spans, err := w.spans()
	if err != nil {
		return err
	}
	for _, s := range spans {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER && s.Name == name && match(s) {
			return nil
		}
	}
	return fmt.Errorf("no matching request span %q among %d spans:%s", name, len(spans), describe(spans))
}

func (w *World) receivedRequestSpan(name string) error {
	return w.findRequestSpan(name, func(tracingtest.Span) bool { return true })
}

func (w *World) receivedChildSpan(name, traceID, parentID string) error {
	return w.findRequestSpan(name, func(s tracingtest.Span) bool { return s.TraceID == traceID && s.ParentSpanID == parentID })
}

func (w *World) allSpansInTrace(traceID string) error {
	spans, err := w.spans()
	if err != nil {
		return err
	}
	for _, s := range spans {
		if s.TraceID != traceID {
			return fmt.Errorf("span %q is in trace %s, want every span in %s:%s", s.Name, s.TraceID, traceID, describe(spans))
		}
	}
	return nil
}
