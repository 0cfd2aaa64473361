package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	restful "github.com/emicklei/go-restful/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/admission"
	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/apiserver/filters"
	"orch.io/orch/components/apiserver/openapi"
	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/apiserver/tracing"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// Config is everything the API server's handler is built from.
type Config struct {
	Clock   clock.Clock
	Storage storage.Interface
	// EventTTL is how long an event is kept after its last write.
	EventTTL      time.Duration
	Authenticator authn.Authenticator
	Authorizer    authz.Authorizer
	// MinRequestTimeout bounds watches that name no timeoutSeconds (Kubernetes: 1800s).
	MinRequestTimeout time.Duration
	// BookmarkInterval is how often a watch allowing bookmarks gets one (Kubernetes: about 1m).
	BookmarkInterval time.Duration
	// Jitter, NewUID and NameSuffix are the server's randomness; a simulator passes seeded ones.
	Jitter     func() float64
	NewUID     func() types.UID
	NameSuffix func() string
	Version    version.Info
	// Metrics receives the server's metrics; nil makes a registry of its own.
	Metrics *prometheus.Registry
	// Stopping closes when shutdown begins, ending open watches.
	Stopping <-chan struct{}
	// Terminating closes when the server is asked to stop, before Stopping: /readyz fails from then
	// on, so load balancers move away while requests are still served.
	Terminating <-chan struct{}
	// Limits cap concurrent requests and their duration.
	Limits filters.Limits
	// ExtraHealthChecks, when set, gives checks /healthz and /readyz run after the server's own
	// (encryption providers' kms-provider-N). It is asked on every request, so the checks follow a
	// reloaded configuration. /livez leaves them out: a plugin outage is no reason to restart.
	ExtraHealthChecks func() []HealthCheck
	// Admission are the admission plugins enabled by flag (EventRateLimit), by name; the server
	// adds those it always runs and orders them as Kubernetes does.
	Admission map[string]admission.Interface
	// TracerProvider, when set, traces every request and the storage calls it makes.
	TracerProvider trace.TracerProvider
	// Node, set with the Node authorization mode, gets the pods store its authorizer reads, and
	// turns on NodeRestriction admission.
	Node *NodeAuthorization
	// Signing, when set, is the CA the server's signer issues approved certificate signing
	// requests with; without it none is signed.
	Signing *Signing
	// ServiceAccounts, when set, issues service account tokens (serviceaccounts/token) and runs
	// the default service account controller.
	ServiceAccounts *ServiceAccounts
}

// HealthCheck is a named check of /healthz and /readyz.
type HealthCheck struct {
	Name  string
	Check func(context.Context) error
}

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
	container.Add(discoveryService(slices.Concat(reg.groups, reviewGroups)))

	docs, err := openapi.Build("orch", c.Version.GitVersion, servedResources(reg.groups))
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/openapi/", docs)
	mux.Handle("/apis/", container)
	mux.Handle("/apis", container)
	mux.Handle("/api/", container)
	mux.Handle("/api", container)
	mux.Handle("/version", jsonHandler(func() any { return c.Version }))
	checks := []HealthCheck{{"ping", func(context.Context) error { return nil }}, {"etcd", storageCheck(c.Clock, c.Storage)}}
	mux.Handle("/healthz", healthHandler("healthz", checks, c.ExtraHealthChecks))
	mux.Handle("/livez", healthHandler("livez", checks, nil))
	mux.Handle("/readyz", healthHandler("readyz", append(checks, HealthCheck{"shutdown", shutdownCheck(c.Terminating)}), c.ExtraHealthChecks))
	mux.Handle("/metrics", promhttp.HandlerFor(c.Metrics, promhttp.HandlerOpts{}))
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

func notFoundPath() error {
	err := apierrors.NewGenericServerResponse(http.StatusNotFound, "", eventsv1.Resource, "", "", 0, false)
	err.ErrStatus.Message = "the server could not find the requested resource"
	err.ErrStatus.Details = &metav1.StatusDetails{}
	return err
}

// serviceError answers go-restful's routing failures with Status bodies, as Kubernetes does.
func serviceError(se restful.ServiceError, req *restful.Request, resp *restful.Response) {
	var err error
	switch se.Code {
	case http.StatusNotFound:
		err = notFoundPath()
	case http.StatusMethodNotAllowed:
		status := apierrors.NewGenericServerResponse(http.StatusMethodNotAllowed, "", eventsv1.Resource, "", "", 0, false)
		status.ErrStatus.Message = "the server does not allow this method on the requested resource"
		status.ErrStatus.Details = &metav1.StatusDetails{}
		err = status
	default:
		status := apierrors.NewGenericServerResponse(se.Code, "", eventsv1.Resource, "", "", 0, false)
		status.ErrStatus.Message = se.Message
		status.ErrStatus.Details = nil
		err = status
	}
	endpoints.WriteError(resp.ResponseWriter, req.Request, err)
}

// discoveryService answers /api and /apis: the core version and every group, in the order of
// groups (events first).
func discoveryService(groups []endpoints.GroupVersion) *restful.WebService {
	groupOf := func(gv schema.GroupVersion) metav1.APIGroup {
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		return metav1.APIGroup{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
			Name:     gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v,
		}
	}
	var all []metav1.APIGroup
	for _, g := range groups {
		if g.GroupVersion.Group != "" {
			all = append(all, groupOf(g.GroupVersion))
		}
	}
	ws := new(restful.WebService)
	ws.Path("/").Produces("*/*")
	ws.Route(ws.GET("/api").To(func(req *restful.Request, resp *restful.Response) {
		writeJSON(resp.ResponseWriter, req.Request, &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: req.Request.Host}},
		})
	}))
	ws.Route(ws.GET("/apis").To(func(req *restful.Request, resp *restful.Response) {
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for _, g := range all {
			g.TypeMeta = metav1.TypeMeta{}
			list.Groups = append(list.Groups, g)
		}
		writeJSON(resp.ResponseWriter, req.Request, list)
	}))
	for _, g := range all {
		ws.Route(ws.GET("/apis/" + g.Name).To(func(req *restful.Request, resp *restful.Response) {
			writeJSON(resp.ResponseWriter, req.Request, &g)
		}))
	}
	return ws
}

func writeJSON(w http.ResponseWriter, r *http.Request, obj any) {
	endpoints.WriteObject(w, r, http.StatusOK, obj)
}

func jsonHandler(obj func() any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, r, obj()) })
}

func storageCheck(clk clock.Clock, s storage.Interface) func(context.Context) error {
	return func(ctx context.Context) error {
		ctx, cancel := clk.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := s.Revision(ctx)
		return err
	}
}

// shutdownCheck fails once terminating closes, as Kubernetes' readyz "shutdown" check does.
func shutdownCheck(terminating <-chan struct{}) func(context.Context) error {
	return func(context.Context) error {
		select {
		case <-terminating:
			return errors.New("process is shutting down")
		default:
			return nil
		}
	}
}

// healthHandler answers like Kubernetes' /healthz: "ok", or with ?verbose one line per check.
// extra, when set, adds the checks it gives at the time of the request.
func healthHandler(name string, checks []HealthCheck, extra func() []HealthCheck) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var report strings.Builder
		failed := false
		all := checks
		if extra != nil {
			all = append(slices.Clip(checks), extra()...)
		}
		for _, c := range all {
			if err := c.Check(r.Context()); err != nil {
				failed = true
				fmt.Fprintf(&report, "[-]%s failed: %v\n", c.Name, err)
			} else {
				fmt.Fprintf(&report, "[+]%s ok\n", c.Name)
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if failed {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "%s%s check failed\n", report.String(), name)
			return
		}
		if _, verbose := r.URL.Query()["verbose"]; verbose {
			fmt.Fprintf(w, "%s%s check passed\n", report.String(), name)
			return
		}
		fmt.Fprint(w, "ok")
	})
}
