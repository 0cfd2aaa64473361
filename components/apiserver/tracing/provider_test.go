package tracing

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	apiv1 "orch.io/orch/components/apis/apiserver/v1"
	"orch.io/orch/components/apiserver/tracing/tracingtest"
)

// The sampler is Kubernetes': parent-based, with the configured rate per million for root spans
// and never sampling them without a rate.
func TestSampler(t *testing.T) {
	rate := func(r int32) *int32 { return &r }
	const parents = ",remoteParentSampled:AlwaysOnSampler,remoteParentNotSampled:AlwaysOffSampler,localParentSampled:AlwaysOnSampler,localParentNotSampled:AlwaysOffSampler}"
	for _, tt := range []struct {
		rate *int32
		want string
	}{
		{nil, "ParentBased{root:AlwaysOffSampler" + parents},
		{rate(0), "ParentBased{root:AlwaysOffSampler" + parents},
		{rate(250), "ParentBased{root:TraceIDRatioBased{0.00025}" + parents},
		{rate(1000000), "ParentBased{root:TraceIDRatioBased{1}" + parents},
	} {
		if got := Sampler(tt.rate).Description(); got != tt.want {
			t.Errorf("rate %v: sampler %s, want %s", tt.rate, got, tt.want)
		}
	}
}

// An unset endpoint reports to localhost:4317 over an insecure connection.
func TestDefaultEndpoint(t *testing.T) {
	// The conformance suite's scenario of the same rule may hold the port for a few seconds.
	var collector *tracingtest.Collector
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(250 * time.Millisecond) {
		c, err := tracingtest.New("127.0.0.1:4317")
		if err == nil {
			collector = c
			break
		}
		if !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	t.Cleanup(collector.Stop)
	tp, err := NewProvider(context.Background(), &apiv1.TracingConfiguration{ComponentTracingConfiguration: apiv1.ComponentTracingConfiguration{SamplingRatePerMillion: func() *int32 { r := int32(1000000); return &r }()}})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer("test").Start(context.Background(), "to the default collector")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans := collector.Spans()
	if len(spans) != 1 || spans[0].Name != "to the default collector" || spans[0].Service != "apiserver" {
		t.Fatalf("collector at localhost:4317 got %+v", spans)
	}
}
