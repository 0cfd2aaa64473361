package pods

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// evictRequest is a pod the eviction manager chose, handed to the next Step.
type evictRequest struct {
	uid     types.UID
	grace   int64
	reason  string
	message string
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
		if p == nil || p.Removed || p.Rejected != "" || p.Evicted != nil {
			m.published.Unevicting(r.uid)
			continue
		}
		m.syncer.Evict(p.PodState, r.grace, r.reason, r.message)
		m.touch(r.uid)
		m.admitted--
		m.enqueue(syncKey(p.Pod), now)
		m.log.Info("Pod evicted", "pod", klog.KObj(p.Pod), "gracePeriod", p.Evicted.Grace, "message", r.message)
	}
}
