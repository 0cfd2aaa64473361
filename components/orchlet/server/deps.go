package server

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/featuregates"
)

// ErrNotFound is wrapped by ContainerLogs and Streams implementations for a pod or container the
// agent does not run; the server answers 404 with the error's text.
var ErrNotFound = errors.New("not found")

// PodLister lists the pods this agent runs.
type PodLister interface {
	Pods() []corev1.Pod
}

// StatsProvider answers /stats/summary.
type StatsProvider interface {
	Summary(ctx context.Context) (*Summary, error)
}

// ContainerLogs writes a container's log to out. opts carries the query of the request
// (tailLines, limitBytes, sinceSeconds, sinceTime, timestamps, follow, previous, stream); with
// Follow the implementation keeps writing until ctx is done.
type ContainerLogs interface {
	ContainerLogs(ctx context.Context, namespace, pod, container string, opts *corev1.PodLogOptions, out io.Writer) error
}

// Deps is what the servers need from the rest of the agent.
type Deps struct {
	// Clock runs the webhook caches and the connection limits. Required.
	Clock clock.Clock
	// NodeName is the name of this node: the object name in authorization requests and the host
	// of a self-signed serving certificate. Required.
	NodeName string
	// Pods answers /pods. Required.
	Pods PodLister
	// Stats answers /stats/summary. Required.
	Stats StatsProvider
	// Configz returns the effective configuration served by /configz. Required.
	Configz func() any
	// Gates are the effective feature gates (OrchletFineGrainedAuthz). Required.
	Gates *featuregates.Gates
	// Metrics is gathered by /metrics. Required.
	Metrics prometheus.Gatherer
	// Logs and Streams serve the debugging handlers; required with --enable-debugging-handlers.
	Logs    ContainerLogs
	Streams Streams

	// CertDir is --cert-dir: where the self-signed pair orchlet.crt/orchlet.key is kept when no
	// --tls-cert-file and --tls-private-key-file are given.
	CertDir string
	// ServingCertificate, when set (--rotate-server-certificates), is the HTTPS server's
	// certificate at each handshake, requested from the API server; until one is issued the
	// server has none to present, as the kubelet's.
	ServingCertificate func() *tls.Certificate
	// APIServer is the base URL of the API server answering TokenReview and SubjectAccessReview,
	// and APIClient the client reaching it; both are required by the token webhook and by
	// --authorization-mode=Webhook.
	APIServer string
	APIClient *http.Client
	// Listen opens the servers' listeners; nil is net.Listen. It receives "tcp" and the
	// configured host:port.
	Listen func(network, address string) (net.Listener, error)
}
