package authz

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"orch.io/orch/components/authn"
)

// Metrics are Kubernetes' authorization metrics, with its names and labels, so its dashboards and
// alerts read orch-apiserver's. A nil *Metrics records nothing.
type Metrics struct {
	decisions          *prometheus.CounterVec
	webhookEvaluations *prometheus.CounterVec
	webhookDuration    *prometheus.HistogramVec
	webhookFailOpen    *prometheus.CounterVec
	matchErrors        *prometheus.CounterVec
	matchExclusions    *prometheus.CounterVec
	matchDuration      *prometheus.HistogramVec
}

// NewMetrics registers the authorization metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_authorization_decisions_total",
			Help: "Total number of terminal decisions made by an authorizer split by authorizer type, name, and decision.",
		}, []string{"type", "name", "decision"}),
		webhookEvaluations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_authorization_webhook_evaluations_total",
			Help: "Round-trips to authorization webhooks.",
		}, []string{"name", "result"}),
		webhookDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_authorization_webhook_duration_seconds",
			Help:    "Request latency in seconds.",
			Buckets: prometheus.DefBuckets,
		}, []string{"name", "result"}),
		webhookFailOpen: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_authorization_webhook_evaluations_fail_open_total",
			Help: "NoOpinion results due to webhook timeout or error.",
		}, []string{"name", "result"}),
		matchErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_authorization_match_condition_evaluation_errors_total",
			Help: "Total number of errors when an authorization webhook encounters a match condition error split by authorizer type and name.",
		}, []string{"type", "name"}),
		matchExclusions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_authorization_match_condition_exclusions_total",
			Help: "Total number of exclusions when an authorization webhook is skipped because match conditions exclude it.",
		}, []string{"type", "name"}),
		matchDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_authorization_match_condition_evaluation_seconds",
			Help:    "Authorization match condition evaluation time in seconds, split by authorizer type and name.",
			Buckets: []float64{0.001, 0.005, 0.01, 0.025, 0.1, 0.2, 0.25},
		}, []string{"type", "name"}),
	}
	reg.MustRegister(m.decisions, m.webhookEvaluations, m.webhookDuration, m.webhookFailOpen,
		m.matchErrors, m.matchExclusions, m.matchDuration)
	return m
}

// Results of one webhook round-trip, as Kubernetes labels them.
const (
	resultSuccess  = "success"  // the answer was well-formed
	resultTimeout  = "timeout"  // the call timed out
	resultCanceled = "canceled" // the request being authorized went away
	resultError    = "error"    // any other failure, a malformed answer included
)

func (m *Metrics) webhookCall(name, result string, took time.Duration) {
	if m == nil {
		return
	}
	m.webhookEvaluations.WithLabelValues(name, result).Inc()
	m.webhookDuration.WithLabelValues(name, result).Observe(took.Seconds())
}

func (m *Metrics) webhookFailedOpen(name, result string) {
	if m != nil {
		m.webhookFailOpen.WithLabelValues(name, result).Inc()
	}
}

// matchEvaluated records one evaluation of an authorizer's match conditions.
func (m *Metrics) matchEvaluated(typ, name string, took time.Duration, excluded, failed bool) {
	if m == nil {
		return
	}
	m.matchDuration.WithLabelValues(typ, name).Observe(took.Seconds())
	if failed {
		m.matchErrors.WithLabelValues(typ, name).Inc()
	}
	if excluded {
		m.matchExclusions.WithLabelValues(typ, name).Inc()
	}
}

// Instrumented counts the terminal decisions of an authorizer of the given type and name, as
// Kubernetes does for each authorizer of its chain: Allow as "allowed", Deny as "denied";
// NoOpinion, which passes the request on, is not counted.
func Instrumented(typ, name string, a Authorizer, m *Metrics) Authorizer {
	if m == nil {
		return a
	}
	return instrumented{a: a, typ: typ, name: name, m: m}
}

// instrumented counts an authorizer's decisions; its rules are the authorizer's.
type instrumented struct {
	a         Authorizer
	typ, name string
	m         *Metrics
}

func (i instrumented) Authorize(ctx context.Context, attrs Attributes) (Decision, string, error) {
	d, reason, err := i.a.Authorize(ctx, attrs)
	switch d {
	case DecisionAllow:
		i.m.decisions.WithLabelValues(i.typ, i.name, "allowed").Inc()
	case DecisionDeny:
		i.m.decisions.WithLabelValues(i.typ, i.name, "denied").Inc()
	}
	return d, reason, err
}

func (i instrumented) RulesFor(ctx context.Context, user *authn.UserInfo, namespace string) (Rules, error) {
	return RulesFor(ctx, i.a, user, namespace)
}
