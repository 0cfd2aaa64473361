package server

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"

	"orch.io/orch/components/apiserver/admission"
	csrcontroller "orch.io/orch/components/apiserver/controllers/certificates"
	"orch.io/orch/components/apiserver/filters"
	"orch.io/orch/components/apiserver/nodeproxy"
	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/authz/rbac"
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
	// Starting, when set, ends New's wait for storage (each resource's first LIST) when it ends: a
	// shutdown asked for before the server serves is not held up by a store that does not answer.
	Starting context.Context
	// Stopping closes when shutdown begins, ending open watches.
	Stopping <-chan struct{}
	// Terminating closes when the server is asked to stop, before Stopping: /readyz fails from then
	// on, so load balancers move away while requests are still served.
	Terminating <-chan struct{}
	// Profiling serves Go's profiles under /debug/pprof/ (kube-apiserver's --profiling); off, the
	// paths are not found.
	Profiling bool
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
	// Roles, when set, is the index of roles and bindings the RBAC authorizer reads, which the
	// server keeps in step with its stores; without it the server keeps one of its own, which the
	// escalation checks of role and binding writes read.
	Roles *rbac.Index
	// Signing, when set, is the CA the server's signer issues approved certificate signing
	// requests with; without it none is signed.
	Signing *Signing
	// ServiceAccounts, when set, issues service account tokens (serviceaccounts/token) and runs
	// the default service account controller.
	ServiceAccounts *ServiceAccounts
	// Nodes reaches the nodes' orchlet servers for pods/log, exec, attach, portforward and
	// nodes/proxy; nil reaches them with nodeproxy's defaults (no client certificate, the
	// serving certificate unverified).
	Nodes *nodeproxy.Client
}

// Signing is the cluster's certificate authority, with which the server's signer issues the
// certificates of approved requests (kube-controller-manager's --cluster-signing-* options).
type Signing = csrcontroller.Signing
