package prober

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Kubernetes' probe defaults, for fields a manifest leaves at zero.
const (
	defaultProbePeriod    = 10
	defaultProbeTimeout   = 1
	defaultProbeThreshold = 3
	// maxProbeBody is how much of an httpGet probe's body is read, as Kubernetes' prober.
	maxProbeBody = 10 * 1024
)

// Type is one of a container's three probes, in the order they run when due together.
type Type int

const (
	None Type = iota
	Startup
	Readiness
	Liveness
	numTypes
)

// Types are the three probes, in order.
var Types = [...]Type{Startup, Readiness, Liveness}

func (t Type) String() string {
	return [...]string{"", "Startup", "Readiness", "Liveness"}[t]
}

// Of is c's probe of type t, nil when it has none.
func (t Type) Of(c *corev1.Container) *corev1.Probe {
	switch t {
	case Startup:
		return c.StartupProbe
	case Readiness:
		return c.ReadinessProbe
	case Liveness:
		return c.LivenessProbe
	}
	return nil
}

// probeResult is a probe worker's state, as Kubernetes' prober worker keeps it: the result it last
// published, and the last raw result with how many times in a row it came.
type probeResult struct {
	published int8 // 0 unknown, 1 success, -1 failure
	last      int8
	run       int
}

func probePeriod(pr *corev1.Probe) time.Duration {
	if pr.PeriodSeconds > 0 {
		return time.Duration(pr.PeriodSeconds) * time.Second
	}
	return defaultProbePeriod * time.Second
}

func probeTimeout(pr *corev1.Probe) time.Duration {
	if pr.TimeoutSeconds > 0 {
		return time.Duration(pr.TimeoutSeconds) * time.Second
	}
	return defaultProbeTimeout * time.Second
}

func failureThreshold(pr *corev1.Probe) int {
	if pr.FailureThreshold > 0 {
		return int(pr.FailureThreshold)
	}
	return defaultProbeThreshold
}

func successThreshold(pr *corev1.Probe) int {
	if pr.SuccessThreshold > 0 {
		return int(pr.SuccessThreshold)
	}
	return 1
}

// Container is what the prober knows of a container across its instances: the running instance
// its probes watch, their results, and why that instance must be killed.
type Container struct {
	// ProbedID is the running instance the probes watch; "" while none runs.
	ProbedID string
	results  [numTypes]probeResult
	// Kill names why ProbedID must be killed and restarted (a liveness or startup probe failed),
	// and KillNote says so in the Killing event.
	Kill     Type
	KillNote string
}

// Started is Kubernetes' container started: it runs and its startup probe, if any, passed.
func (s *Container) Started(c *corev1.Container) bool {
	return s.ProbedID != "" && (c.StartupProbe == nil || s.results[Startup].published > 0)
}

// Ready is Kubernetes' container ready: started and its readiness probe, if any, passed.
func (s *Container) Ready(c *corev1.Container) bool {
	return s.Started(c) && (c.ReadinessProbe == nil || s.results[Readiness].published > 0)
}

// Watch starts watching the running instance id: readiness failed, liveness passed and startup
// unknown, as in Kubernetes' prober.
func (s *Container) Watch(id string) {
	*s = Container{ProbedID: id}
	s.results[Readiness].published = -1
	s.results[Liveness].published = 1
}

// Unwatch stops watching: no instance runs.
func (s *Container) Unwatch() { *s = Container{} }

// FirstProbe is when a probe of an instance started at startedAt first runs: initialDelaySeconds
// after the start, or now if that has passed.
func FirstProbe(pr *corev1.Probe, startedAt, now time.Time) time.Time {
	first := startedAt.Add(time.Duration(pr.InitialDelaySeconds) * time.Second)
	if first.Before(now) {
		return now
	}
	return first
}
