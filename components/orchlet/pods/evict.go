package pods

import (
	"context"
	"fmt"
	"time"

	"orch.io/orch/components/orchlet/events"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/pods/labels"
	"orch.io/orch/components/orchlet/pods/prober"
)

// AdmitFunc is an admission handler run before the others (Kubernetes adds the eviction manager's
// first): a refusal fails the pod for good with the reason and message, and records them as a
// Warning event.
type AdmitFunc func(pod *corev1.Pod) (ok bool, reason, message string)

// evictRequest is a pod the eviction manager chose, handed to the next Step.
type evictRequest struct {
	uid     types.UID
	grace   int64
	reason  string
	message string
}

// evicted is what the manager remembers of a pod it evicts.
type evicted struct {
	grace int64
	done  bool // its containers and sandboxes are stopped
}

// Evict kills the pod uid with the grace period override (negative: at once) and fails it with
// reason and message, as Kubernetes' eviction manager's killPodFunc does: phase Failed, the pod
// kept (stopped) until its source removes it, never restarted, and no longer counted against the
// pods capacity. It never blocks on the runtime: the next Step does it.
func (m *Manager) Evict(uid types.UID, gracePeriodSeconds int64, reason, message string) {
	m.published.Evicting(uid)
	m.evictions.add(evictRequest{uid: uid, grace: gracePeriodSeconds, reason: reason, message: message})
	m.poke()
}

// ActivePods are the published pods that run or may run: not rejected, evicted, finished or
// being removed; in namespace/name order. They are shared and must not be modified.
func (m *Manager) ActivePods() []*corev1.Pod { return m.published.ActivePods() }

// CleanedUp tells whether the pod uid evicted earlier has had its containers and sandboxes
// stopped (Kubernetes' podResourcesAreReclaimed, as the eviction manager waits on it), or is not
// the manager's at all.
func (m *Manager) CleanedUp(uid types.UID) bool { return m.published.CleanedUp(uid) }

// applyEvictions marks the pods evicted and queues their kill.
func (m *Manager) applyEvictions() {
	now := m.clk.Now()
	rs := m.evictions.take()
	for i, r := range rs {
		if m.busy[r.uid] {
			m.evictions.putBack(rs[i:]...) // applied once the pod's sync in progress ends
			return
		}
		p := m.pods[r.uid]
		if p == nil || p.removed || p.rejected != "" || p.evicted != nil {
			m.published.Unevicting(r.uid)
			continue
		}
		p.evicted = &evicted{grace: max(r.grace, 0)}
		p.status.Phase, p.status.Reason, p.status.Message = corev1.PodFailed, r.reason, r.message
		p.evictReason, p.evictMessage = r.reason, r.message
		m.touch(r.uid)
		m.admitted--
		for name := range p.ctrs {
			for _, t := range prober.Types {
				m.dequeue(p.probeKey(name, t))
			}
		}
		m.enqueue(p.syncKey(), now)
		m.log.Info("Pod evicted", "pod", klog.KObj(p.pod), "gracePeriod", p.evicted.grace, "message", r.message)
	}
}

// killEvicted stops the evicted pod's containers within the override and its sandboxes, then
// shows its containers as they ended; it stays Failed with the eviction's reason and message.
func (m *Manager) killEvicted(ctx context.Context, p *podState) error {
	if p.evicted.done {
		return nil
	}
	sbs, ctrs, err := m.listPod(ctx, p.pod.UID)
	if err != nil {
		return err
	}
	sortContainers(ctrs)
	grace := p.evicted.grace
	for _, c := range ctrs {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		name := c.Labels[labels.ContainerName]
		m.rec.Eventf(events.ContainerReference(p.pod, name), corev1.EventTypeNormal, ReasonKilling, "Killing", "Stopping container %s", name)
		if err := m.calls.Within(ctx, m.timeout+time.Duration(grace)*time.Second, func(ctx context.Context) error {
			return m.rt.StopContainer(ctx, c.Id, grace)
		}); err != nil {
			return fmt.Errorf("stopping container %s: %w", name, err)
		}
	}
	for _, s := range sbs {
		if s.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		if err := m.calls.Request(ctx, func(ctx context.Context) error { return m.rt.StopPodSandbox(ctx, s.Id) }); err != nil {
			return fmt.Errorf("stopping sandbox %s: %w", s.Id, err)
		}
	}
	statuses := map[string]*runtimeapi.ContainerStatus{}
	latest := map[string]uint32{}
	for _, c := range ctrs {
		name := c.Metadata.GetName()
		if a, seen := latest[name]; seen && a > c.Metadata.GetAttempt() {
			continue
		}
		var st *runtimeapi.ContainerStatus
		if err := m.calls.Request(ctx, func(ctx context.Context) error {
			resp, err := m.rt.ContainerStatus(ctx, c.Id, false)
			st = resp.GetStatus()
			return err
		}); err != nil {
			return fmt.Errorf("status of container %s: %w", name, err)
		}
		latest[name], statuses[name] = c.Metadata.GetAttempt(), st
	}
	for _, cs := range p.ctrs {
		cs.waiting = nil
	}
	m.setStatus(p, statuses)
	p.evicted.done = true
	m.published.CleanUp(p.pod.UID)
	return nil
}

// admitEviction runs the eviction manager's admission; a refused pod fails for good.
func (m *Manager) admitEviction(p *podState) bool {
	if m.admit == nil {
		return true
	}
	ok, reason, message := m.admit(p.pod)
	if ok {
		return true
	}
	p.rejected = message
	p.status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: reason, Message: message}
	m.rec.Eventf(events.PodReference(p.pod), corev1.EventTypeWarning, reason, "Admit", "%s", message)
	m.log.Info("Pod rejected", "pod", klog.KObj(p.pod), "reason", reason, "message", message)
	return false
}
