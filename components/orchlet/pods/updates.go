package pods

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/sources"
)

// applyUpdates admits new pods in the order the sources sent them: a pod beyond the capacity is
// rejected for good, as Kubernetes' kubelet rejects it, and later removals do not admit it.
func (m *Manager) applyUpdates() {
	us := m.inbox.take()
	now := m.clk.Now()
	for i, u := range us {
		if m.busy[u.Pod.UID] {
			// As the kubelet's pod workers, an update waits for the pod's sync in progress;
			// those after it wait too, so that they apply in order.
			m.inbox.putBack(us[i:]...)
			return
		}
		m.touch(u.Pod.UID)
		p := m.pods[u.Pod.UID]
		switch u.Op {
		case sources.OpRemove:
			if p == nil && u.Pod.DeletionTimestamp != nil && m.relister.Holds(u.Pod.UID) {
				// A pod being deleted that these workers never held and the runtime does: a
				// restarted agent listed it from the API mid-deletion. It is torn down with the
				// deletion's grace, as the kubelet's pod workers take a pod with a
				// deletionTimestamp as terminating, not later as an orphan with its containers'.
				p = newPodState(u.Pod.DeepCopy(), now)
				p.Removed = true
				m.shared.Lock()
				m.pods[u.Pod.UID] = p
				m.shared.Unlock()
				m.enqueue(syncKey(p.Pod), now)
				continue
			}
			if p == nil || p.Removed {
				continue
			}
			if p.Rejected != "" {
				m.shared.Lock()
				delete(m.pods, u.Pod.UID)
				m.shared.Unlock()
				continue
			}
			if p.Evicted == nil {
				m.admitted--
			}
			p.Removed = true
			// A deletion through the API may shorten the grace period the spec gives.
			p.Pod.DeletionGracePeriodSeconds = u.Pod.DeletionGracePeriodSeconds
			m.enqueue(syncKey(p.Pod), now)
		default:
			if p != nil && !p.Removed {
				p.Pod = u.Pod.DeepCopy()
				if p.Evicted != nil {
					continue // an evicted pod stays Failed whatever its spec becomes
				}
				m.syncer.Updated(p.PodState)
				m.enqueue(syncKey(p.Pod), now)
				continue
			}
			if phase := u.Pod.Status.Phase; phase == corev1.PodFailed || phase == corev1.PodSucceeded {
				// The API shows it finished (this agent evicted or completed it before a restart):
				// it is not run again, as the kubelet's pod workers take such a pod as terminated.
				// What is left of it in the runtime is the garbage collectors'.
				m.log.V(2).Info("Pod is terminal in the API; not starting it", "pod", klog.KObj(u.Pod), "phase", phase)
				continue
			}
			p = newPodState(u.Pod.DeepCopy(), now)
			m.shared.Lock()
			m.pods[u.Pod.UID] = p
			m.shared.Unlock()
			if !m.admitEviction(p) || !m.admitSysctls(p) || !m.admitSpec(p) {
				continue
			}
			if m.admitted >= m.capacity {
				m.reject(p, ReasonOutOfPods, fmt.Sprintf("Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d", m.admitted, m.capacity))
				continue
			}
			if m.node.Allocatable != nil {
				if reason, msg := insufficientResource(p.Pod, m.activePods(p), m.node.Allocatable); reason != "" {
					m.reject(p, reason, msg)
					continue
				}
			}
			m.admitted++
			m.enqueue(syncKey(p.Pod), now)
		}
	}
}
