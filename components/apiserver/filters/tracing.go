package filters

import (
	"net/http"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"orch.io/orch/components/apiserver/tracing"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// systemMonitoringGroup may, with system:masters, continue a client's trace (Kubernetes' rule).
const systemMonitoringGroup = "system:monitoring"

// WithTracing makes each request a server span named after its route, as Kubernetes' tracing
// filter does, with the storage calls it makes as children. It runs after authorization, as in
// Kubernetes, so it knows the user: a W3C traceparent is honoured (the span is its child, and
// follows its sampling decision) only from system:masters and system:monitoring; anyone else's
// request starts a new trace linked to theirs, so an untrusted client can neither pick trace ids
// nor force sampling.
func WithTracing(next http.Handler, tp trace.TracerProvider) http.Handler {
	tracer := tp.Tracer("orch.io/orch/components/apiserver")
	propagators := tracing.Propagators()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagators.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		a := requestAttributes(r)
		route := spanName(r.Method, a)
		opts := []trace.SpanStartOption{
			trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				attribute.String("http.request.method", r.Method),
				attribute.String("http.route", strings.TrimPrefix(route, r.Method+" ")),
				attribute.String("url.path", r.URL.Path),
				attribute.String("verb", a.Verb),
			),
		}
		if a.ResourceRequest {
			opts = append(opts, trace.WithAttributes(
				attribute.String("resource", a.Resource),
				attribute.String("group", a.APIGroup),
				attribute.String("version", a.APIVersion),
				attribute.String("namespace", a.Namespace),
			))
		}
		if remote := trace.SpanContextFromContext(ctx); remote.IsValid() && !trustedForTracing(r) {
			opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: remote}))
		}
		ctx, span := tracer.Start(ctx, route, opts...)
		defer span.End()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r.WithContext(ctx))
		code := rec.code
		if code == 0 {
			code = http.StatusOK
		}
		span.SetAttributes(attribute.Int("http.response.status_code", code))
		if code >= http.StatusInternalServerError {
			span.SetStatus(codes.Error, http.StatusText(code))
		}
	})
}

func trustedForTracing(r *http.Request) bool {
	u, ok := authn.UserFrom(r.Context())
	return ok && (slices.Contains(u.Groups, systemPrivilegedGroup) || slices.Contains(u.Groups, systemMonitoringGroup))
}

// spanName is Kubernetes' span name: the method and, for a resource request, its route with the
// namespace and name as placeholders ("POST /apis/events.orch.io/v1/namespaces/{:namespace}/events").
func spanName(method string, a authz.Attributes) string {
	if !a.ResourceRequest {
		return method
	}
	name := "/apis/" + a.APIGroup
	if a.APIGroup == "" {
		name = "/api"
	}
	name += "/" + a.APIVersion
	if a.Namespace != "" {
		name += "/namespaces/{:namespace}"
	}
	name += "/" + a.Resource
	if a.Name != "" {
		name += "/{:name}"
	}
	if a.Subresource != "" {
		name += "/" + a.Subresource
	}
	return method + " " + name
}
