package server

import (
	"context"
	"errors"
	"net/http"
	"slices"

	restful "github.com/emicklei/go-restful/v3"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/apiserver/filters"
	"orch.io/orch/components/apiserver/openapi"
	"orch.io/orch/components/apiserver/tracing"
)

// New returns the API server's root handler.
func New(c Config) (http.Handler, error) {
	if c.Clock == nil || c.Storage == nil || c.Authenticator == nil || c.Authorizer == nil {
		return nil, errors.New("server: Clock, Storage, Authenticator and Authorizer are required")
	}
	if c.Jitter == nil {
		c.Jitter = func() float64 { return 0 }
	}
	if c.TracerProvider != nil {
		c.Storage = tracing.Storage(c.Storage, c.TracerProvider)
	}
	if c.Metrics == nil {
		c.Metrics = NewRegistry()
	}
	reg, err := newRegistry(c)
	if err != nil {
		return nil, err
	}
	// controllerCtx ends when shutdown begins: the controllers stop, and open watches end.
	controllerCtx, stopControllers := context.WithCancel(context.Background())
	go func() {
		<-c.Stopping
		stopControllers()
	}()
	reg.startControllers(controllerCtx, c)

	container := restful.NewContainer()
	container.Router(&routeCache{})
	container.ServiceErrorHandler(serviceError)
	endpointsConfig := endpoints.Config{
		Clock: c.Clock, MinRequestTimeout: c.MinRequestTimeout,
		Jitter: c.Jitter, BookmarkInterval: c.BookmarkInterval, Stopping: controllerCtx,
	}
	for _, gv := range reg.groups {
		container.Add(gv.WebService(endpointsConfig))
	}
	reviewGroups := addReviews(container, c)
	served := slices.Concat(reg.groups, reviewGroups)
	aliases := aliasesOf(served)
	container.Add(discoveryService(served, aliases))

	docs, err := openapi.Build("orch", c.Version.GitVersion, servedResources(reg.groups))
	if err != nil {
		return nil, err
	}
	var resources http.Handler = container
	if dispatchDirectly {
		resources = newContainerMux(container)
	}
	mux := newPlainMux()
	mux.Handle("/openapi/", docs)
	mux.Handle("/apis/", resources)
	mux.Handle("/apis", resources)
	mux.Handle("/api/", resources)
	mux.Handle("/api", resources)
	for _, a := range aliases {
		path := "/apis/" + a.kubernetes.String()
		mux.Handle(path, a.handler(resources))
		mux.Handle(path+"/", a.handler(resources))
	}
	mux.Handle("/version", jsonHandler(func() any { return c.Version }))
	checks := []HealthCheck{{"ping", func(context.Context) error { return nil }}, {"etcd", storageCheck(c.Clock, c.Storage)}}
	mux.Handle("/healthz", healthHandler("healthz", checks, c.ExtraHealthChecks))
	mux.Handle("/livez", healthHandler("livez", checks, nil))
	mux.Handle("/readyz", healthHandler("readyz", append(checks, HealthCheck{"shutdown", shutdownCheck(c.Terminating)}), c.ExtraHealthChecks))
	mux.Handle("/metrics", promhttp.HandlerFor(c.Metrics, promhttp.HandlerOpts{}))
	if c.Profiling {
		profilingRoutes(mux)
	}
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		endpoints.WriteError(w, r, notFoundPath())
	}))

	var h http.Handler = mux
	if reg.admission.JudgesRequests() {
		h = filters.WithAdmission(h, reg.admission.AdmitRequest)
	}
	if c.TracerProvider != nil {
		h = filters.WithTracing(h, c.TracerProvider)
	}
	h = filters.WithAuthorization(h, c.Authorizer)
	h = filters.WithMaxInFlightLimit(h, c.Limits, c.Metrics)
	h = filters.WithAuthentication(h, c.Authenticator)
	h = filters.WithRequestTimeout(h, c.Clock, c.Limits.RequestTimeout)
	h = filters.WithRequestMetrics(h, c.Clock, c.Metrics)
	h = filters.WithPanicRecovery(h)
	return h, nil
}
