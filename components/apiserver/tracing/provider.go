package tracing

import (
	"context"
	"fmt"
	"os"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	apiv1 "orch.io/orch/components/apis/apiserver/v1"
)

// DefaultEndpoint is the collector an unset endpoint reports to: OTLP over gRPC on this host.
const DefaultEndpoint = "localhost:4317"

// serviceName is the service Kubernetes' API server reports its spans as.
const serviceName = "apiserver"

// Sampler is Kubernetes' sampler for a TracingConfiguration: a span follows its parent's
// decision, and a span without a parent is sampled with the configured rate per million (never
// when the rate is unset or 0).
func Sampler(samplingRatePerMillion *int32) sdktrace.Sampler {
	root := sdktrace.NeverSample()
	if r := samplingRatePerMillion; r != nil && *r > 0 {
		root = sdktrace.TraceIDRatioBased(float64(*r) / 1e6)
	}
	return sdktrace.ParentBased(root)
}

// Propagators read and write W3C trace context and baggage, as Kubernetes' do.
func Propagators() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}

// NewProvider returns a tracer provider that batches spans to the configuration's collector
// over insecure OTLP gRPC (TLS is not supported, as SPEC.md says). Shut it down to flush.
func NewProvider(ctx context.Context, c *apiv1.TracingConfiguration) (*sdktrace.TracerProvider, error) {
	endpoint := DefaultEndpoint
	if c.Endpoint != nil {
		endpoint = *c.Endpoint
	}
	exporter, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure())
	if err != nil {
		return nil, fmt.Errorf("tracing: exporter to %s: %w", endpoint, err)
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", serviceName)}
	if host, err := os.Hostname(); err == nil {
		attrs = append(attrs, attribute.String("service.instance.id", host))
	}
	return sdktrace.NewTracerProvider(
		sdktrace.WithSampler(Sampler(c.SamplingRatePerMillion)),
		sdktrace.WithBatcher(exporter),
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
	), nil
}
