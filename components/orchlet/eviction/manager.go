package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// MonitoringInterval is how often the manager observes, as the kubelet's housekeeping does.
const MonitoringInterval = 10 * time.Second

// After an eviction the next round waits until the evicted pods are cleaned up, looking every
// podCleanupPollFreq for at most podCleanupTimeout (eviction_manager.go's waitForPodsCleanup), so
// a pod still stopping is not taken for pressure that needs another eviction.
const (
	podCleanupTimeout  = 30 * time.Second
	podCleanupPollFreq = time.Second
)

// Observer observes the node and its pods.
type Observer interface {
	Observe(ctx context.Context) (Stats, error)
}

// Reclaimer reclaims node-level resources before any pod is evicted under disk pressure: the
// image and dead-container garbage collectors (Kubernetes' ImageGC.DeleteUnusedImages and
// ContainerGC.DeleteAllUnusedContainers).
type Reclaimer interface {
	DeleteAllUnusedContainers(ctx context.Context) error
	DeleteUnusedImages(ctx context.Context) error
}

// Pods are the pod workers as the manager sees them; *pods.Manager is one.
type Pods interface {
	// ActivePods are the pods that run or may run, in a stable order.
	ActivePods() []*corev1.Pod
	// Evict kills the pod with the grace period override and fails it with reason and message.
	Evict(uid types.UID, gracePeriodSeconds int64, reason, message string)
	// CleanedUp tells whether an evicted pod's containers and sandboxes are stopped.
	CleanedUp(uid types.UID) bool
}

// Recorder records events; *events.Recorder is one.
type Recorder interface {
	Eventf(regarding *corev1.ObjectReference, eventType, reason, action, noteFormat string, args ...any)
}

// Options are what the manager needs from the agent.
type Options struct {
	Clock    clock.Clock
	Config   Config
	Observer Observer
	// Reclaimer is nil when this agent has no garbage collector to call: reclaim then frees
	// nothing and the observation after it decides.
	Reclaimer Reclaimer
	Pods      Pods
	Recorder  Recorder
	NodeName  string
	Logger    klog.Logger
	// Memcg arms the memory thresholds with the kernel when the configuration asks for it
	// (--kernel-memcg-notification); nil when the host offers no memcg notifications, which
	// MemcgUnavailable then says why, and memory is observed every MonitoringInterval only.
	Memcg            *MemcgNotifications
	MemcgUnavailable string
}

// Manager is the thin loop around Core: every MonitoringInterval it observes, asks for node-level
// reclaim, observes again and evicts what the core chose. Run drives it, or a simulator calls
// Step when NextDeadline is due.
type Manager struct {
	o Options
	// evictions is Kubernetes' kubelet_evictions, renamed: pods evicted, by signal.
	evictions *prometheus.CounterVec

	mu   sync.Mutex // guards everything below
	core *Core
	next time.Time
	// cleanup are the pods evicted last round, waited for until cleanupBy.
	cleanup   []types.UID
	cleanupBy time.Time
	// notifiers are the memory thresholds armed with the kernel, again from each round's
	// observation once armedAt is notifierRefreshInterval old; events hears their crossings.
	notifiers []*memoryThresholdNotifier
	armedAt   time.Time
	events    chan struct{}
}

// NewManager checks o and returns a manager whose first Step observes at once.
func NewManager(o Options) (*Manager, error) {
	if o.Clock == nil || o.Observer == nil || o.Pods == nil || o.Recorder == nil || o.NodeName == "" {
		return nil, errors.New("eviction: Clock, Observer, Pods, Recorder and NodeName are required")
	}
	if o.Logger.GetSink() == nil {
		o.Logger = klog.Background()
	}
	evictions := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "orchlet_evictions", Help: "Cumulative number of pod evictions by eviction signal",
	}, []string{"eviction_signal"})
	m := &Manager{o: o, evictions: evictions, core: NewCore(o.Config), next: o.Clock.Now(), events: make(chan struct{}, 1)}
	if o.Config.KernelMemcgNotification {
		if o.Memcg == nil {
			o.Logger.Info("Eviction manager: the host offers no memcg threshold notifications; memory thresholds are polled every 10s", "reason", o.MemcgUnavailable)
		} else {
			for _, t := range o.Config.Thresholds {
				if t.Signal == SignalMemoryAvailable || t.Signal == SignalAllocatableMemoryAvailable {
					m.notifiers = append(m.notifiers, newMemoryThresholdNotifier(t, o.Memcg))
				}
			}
		}
	}
	return m, nil
}

// Describe and Collect make the manager a prometheus.Collector of its metrics.
func (m *Manager) Describe(ch chan<- *prometheus.Desc) { m.evictions.Describe(ch) }
func (m *Manager) Collect(ch chan<- prometheus.Metric) { m.evictions.Collect(ch) }

// Admit is the core's admission, for the pod workers' admission hook.
func (m *Manager) Admit(pod *corev1.Pod) (bool, string, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.core.Admit(pod)
}

// Conditions are the node's pressure conditions as of the last round.
func (m *Manager) Conditions() []corev1.NodeConditionType {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.core.Conditions()
}

// NextDeadline is when the next round is due.
func (m *Manager) NextDeadline() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next, true
}

// Idle is true when no round is due now and no memory threshold crossing waits.
func (m *Manager) Idle() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.o.Clock.Now().Before(m.next) && len(m.events) == 0
}

// Run does a round every MonitoringInterval, and at once when a memory threshold armed with the
// kernel is crossed, until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	defer m.stopNotifiers()
	for {
		m.Step(ctx)
		next, _ := m.NextDeadline()
		t := m.o.Clock.Timer(next.Sub(m.o.Clock.Now()))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		case <-m.events:
			t.Stop()
			m.mu.Lock()
			m.notified()
			m.mu.Unlock()
		}
	}
}

// notified makes a round due now: a memory threshold was crossed (the kubelet's thresholdHandler
// synchronizes at once). A round still waiting for evicted pods to be cleaned up waits on.
func (m *Manager) notified() {
	m.o.Logger.Info("Eviction manager: memory eviction threshold crossed")
	if now := m.o.Clock.Now(); now.Before(m.next) {
		m.next = now
	}
}

func (m *Manager) stopNotifiers() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range m.notifiers {
		n.stop()
	}
}

// Step does a round if one is due, or a memory threshold crossing waits, and reports whether it
// did.
func (m *Manager) Step(ctx context.Context) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	select {
	case <-m.events:
		m.notified()
	default:
	}
	now := m.o.Clock.Now()
	if now.Before(m.next) {
		return false
	}
	if len(m.cleanup) > 0 {
		if now.Before(m.cleanupBy) && !m.cleanedUp() {
			m.next = now.Add(podCleanupPollFreq)
			return true
		}
		m.cleanup = nil
	}
	m.next = now.Add(MonitoringInterval)
	if evicted := m.round(ctx, now); len(evicted) > 0 {
		// As the kubelet's loop: wait for the pods, then the next round at once.
		m.o.Logger.Info("Eviction manager: pods evicted, waiting for pod to be cleaned up", "pods", len(evicted))
		m.cleanup, m.cleanupBy, m.next = evicted, now.Add(podCleanupTimeout), now.Add(podCleanupPollFreq)
	}
	return true
}

func (m *Manager) cleanedUp() bool {
	for _, uid := range m.cleanup {
		if !m.o.Pods.CleanedUp(uid) {
			return false
		}
	}
	return true
}

// round is synchronize with its I/O: observe, decide, reclaim and observe again, evict; it returns
// the pods it evicted.
func (m *Manager) round(ctx context.Context, now time.Time) []types.UID {
	log := m.o.Logger
	stats, err := m.o.Observer.Observe(ctx)
	if err != nil {
		// As the kubelet: no observation, no decision this round.
		log.Error(err, "Eviction manager: failed to observe the node")
		return nil
	}
	m.armNotifiers(now, stats)
	if len(stats.Unobserved) > 0 {
		log.V(2).Info("Eviction manager: deciding without what could not be observed", "unobserved", stats.Unobserved)
	}
	before := m.core.Conditions()
	r := m.core.Synchronize(now, stats, m.o.Pods.ActivePods())
	if !slices.Equal(before, r.Conditions) {
		log.Info("Eviction manager: node pressure changed", "conditions", r.Conditions)
	}
	evictions := r.Evictions
	if r.Reclaiming != "" {
		log.Info("Eviction manager: attempting to reclaim", "resourceName", r.Reclaiming)
		m.o.Recorder.Eventf(nodeReference(m.o.NodeName), corev1.EventTypeWarning, ReasonThresholdMet, "Reclaim", "Attempting to reclaim %s", r.Reclaiming)
	}
	if r.Reclaim != (Reclaim{}) {
		m.reclaim(ctx, r.Reclaim, r.Reclaiming)
		after, err := m.o.Observer.Observe(ctx)
		if err != nil {
			log.Error(err, "Eviction manager: failed to observe the node after reclaim")
			return nil
		}
		evictions = m.core.AfterReclaim(after)
		if len(evictions) == 0 {
			log.Info("Eviction manager: able to reduce resource pressure without evicting pods.", "resourceName", r.Reclaiming)
		}
	}
	var evicted []types.UID
	for _, e := range evictions {
		evicted = append(evicted, e.Pod.UID)
		m.o.Recorder.Eventf(podReference(e.Pod), corev1.EventTypeWarning, Reason, "Evict", "%s", e.Message)
		m.o.Pods.Evict(e.Pod.UID, e.GracePeriodSeconds, Reason, e.Message)
		m.evictions.WithLabelValues(e.Signal).Inc()
		log.Info("Eviction manager: pod is evicted successfully", "pod", klog.KObj(e.Pod), "signal", e.Signal, "gracePeriod", e.GracePeriodSeconds)
	}
	return evicted
}

// armNotifiers arms the memory thresholds again from this observation once the last arming is
// notifierRefreshInterval old, as synchronize does; a threshold that cannot be armed is logged and
// polled meanwhile.
func (m *Manager) armNotifiers(now time.Time, s Stats) {
	if len(m.notifiers) == 0 || (!m.armedAt.IsZero() && now.Sub(m.armedAt) < notifierRefreshInterval) {
		return
	}
	m.armedAt = now
	for _, n := range m.notifiers {
		if err := n.updateThreshold(s, m.events); err != nil {
			m.o.Logger.Info("Eviction manager: failed to update memory threshold notifier", "notifier", n.Description(), "err", err)
		}
	}
}

// reclaim runs the node-level reclaim functions in Kubernetes' order: containers, then images.
func (m *Manager) reclaim(ctx context.Context, r Reclaim, res corev1.ResourceName) {
	if m.o.Reclaimer == nil {
		m.o.Logger.Info("Eviction manager: no garbage collector to reclaim node-level resources with", "resourceName", res)
		return
	}
	var errs []error
	if r.Containers {
		if err := m.o.Reclaimer.DeleteAllUnusedContainers(ctx); err != nil {
			errs = append(errs, fmt.Errorf("dead containers: %w", err))
		}
	}
	if r.Images {
		if err := m.o.Reclaimer.DeleteUnusedImages(ctx); err != nil {
			errs = append(errs, fmt.Errorf("unused images: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		m.o.Logger.Info("Eviction manager: unexpected error when attempting to reduce resource pressure", "resourceName", res, "err", err)
	}
}

// nodeReference and podReference are events.NodeReference and events.PodReference, which this
// package cannot import: the options validation reads its threshold parser, and the events
// package's tests read the options.
func nodeReference(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
}

func podReference(pod *corev1.Pod) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
}
