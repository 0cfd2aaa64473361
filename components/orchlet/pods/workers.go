package pods

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/pods/backoff"
	"orch.io/orch/components/orchlet/pods/podsync"
)

// stepParallel is Step on a real node, as Kubernetes' pod workers: each pod's due items run in
// order on a goroutine of their own, up to m.workers pods at once, so that one pod's slow runtime
// calls hold up no other pod, and a pod goes on to its next item (its containers once its sandbox
// is up) as soon as its worker is done, whatever the others do. Updates, evictions, the relist and
// the resync are handled here meanwhile; an update or eviction of a pod being synced waits for
// its worker. It returns, once every worker is done and nothing is due, how many items it did.
func (m *Manager) stepParallel(ctx context.Context) int {
	n := 0
	for {
		n += m.dispatch(ctx)
		m.publishTouched()
		if len(m.busy) == 0 {
			if next, ok := m.nextDue(); !ok || next.After(m.clk.Now()) {
				return n
			}
			continue
		}
		// Woken by a worker that is done, an update, or the next item due of a pod no worker
		// holds while a worker is free.
		var timer *clock.Timer
		var due <-chan time.Time
		if next, ok := m.nextDue(); ok && len(m.busy) < m.workers {
			timer = m.clk.Timer(next.Sub(m.clk.Now()))
			due = timer.C
		}
		select {
		case uid := <-m.done:
			m.workerDone(uid)
		case <-m.wake:
		case <-due:
		}
		if timer != nil {
			timer.Stop()
		}
		// Every worker that finished meanwhile, at once.
		for drained := false; !drained; {
			select {
			case uid := <-m.done:
				m.workerDone(uid)
			default:
				drained = true
			}
		}
		m.applyUpdates()
		m.applyEvictions()
		m.applyPulls()
	}
}

// dispatch hands each pod with items due now, and no worker, to a worker, as long as workers are
// free, and does the due relist and resync; it returns how many items it handed out or did.
func (m *Manager) dispatch(ctx context.Context) int {
	n := 0
	now := m.clk.Now()
	for len(m.busy) < m.workers {
		k, ok := m.popDueIdle(now)
		if !ok {
			break
		}
		n++
		if k.kind == kindRelist || k.kind == kindResync || k.kind == kindHousekeeping {
			m.do(ctx, k)
			continue
		}
		items := []itemKey{k}
		for {
			more, ok := m.popDueOf(k.uid, now)
			if !ok {
				break
			}
			n++
			items = append(items, more)
		}
		m.busy[k.uid] = true
		go func() {
			for _, k := range items {
				m.do(ctx, k)
			}
			m.done <- k.uid
		}()
	}
	return n
}

// workerDone takes back the pod uid from its worker.
func (m *Manager) workerDone(uid types.UID) {
	delete(m.busy, uid)
	m.reap(uid)
}

// nextDue is the earliest due time of an item no worker holds; false when there is none.
func (m *Manager) nextDue() (time.Time, bool) {
	m.shared.Lock()
	defer m.shared.Unlock()
	var next time.Time
	found := false
	for k, due := range m.queue {
		if m.busy[k.uid] {
			continue
		}
		if !found || due.Before(next) {
			next, found = due, true
		}
	}
	return next, found
}

// popDueIdle is popDue among the items of pods no worker holds.
func (m *Manager) popDueIdle(now time.Time) (itemKey, bool) {
	return m.popDueWhere(now, func(k itemKey) bool { return !m.busy[k.uid] })
}

// popDueOf is popDue among the items of the pod uid.
func (m *Manager) popDueOf(uid types.UID, now time.Time) (itemKey, bool) {
	return m.popDueWhere(now, func(k itemKey) bool { return k.uid == uid })
}

func (m *Manager) do(ctx context.Context, k itemKey) {
	now := m.clk.Now()
	switch k.kind {
	case kindRelist:
		m.relistRuntime(ctx)
		m.enqueue(itemKey{kind: kindRelist}, now.Add(m.relist))
	case kindResync:
		for _, p := range m.pods {
			if p.Rejected == "" && p.Evicted == nil {
				m.enqueue(syncKey(p.Pod), now)
			}
		}
		m.enqueue(itemKey{kind: kindResync}, now.Add(m.syncFreq))
	case kindHousekeeping:
		m.housekeeping()
		m.enqueue(itemKey{kind: kindHousekeeping}, now.Add(housekeepingPeriod))
	case kindSync:
		p := m.pod(k.uid)
		if p == nil {
			return
		}
		m.sync(ctx, p)
	case kindProbe:
		p := m.pod(k.uid)
		if p == nil || p.Removed {
			return
		}
		m.syncer.Probe(ctx, p.PodState, k.container, k.probe)
	}
}

// ReasonFailedSync is the event of a pod whose sync failed, to be retried, as Kubernetes'.
const ReasonFailedSync = "FailedSync"

// sync makes the runtime match one pod, and retries with back-off when the runtime fails it.
func (m *Manager) sync(ctx context.Context, p *podState) {
	if p.Rejected != "" {
		return
	}
	if until, wait := p.syncErr.WaitSince(p.syncErr.Last, m.clk.Now()); wait {
		// A relist or resync does not cut short the back-off after a failed sync.
		m.enqueue(syncKey(p.Pod), until)
		return
	}
	// As the kubelet's pod worker, a sync never decides on what was read before its pod's last
	// change by the agent's hand: it reads the relist's pod cache when a relist read the pod
	// after that, and the runtime itself when none did (a sync queued at once after one that
	// started or stopped something, a pod new to the runtime) or to tear down or kill the pod.
	var listed *podsync.Listed
	if cached := m.relister.NewerThan(p.Pod.UID, p.synced); cached != nil && !p.Removed && p.Evicted == nil {
		listed = &podsync.Listed{Sandboxes: cached.Sandboxes, Containers: cached.Containers}
	}
	err := m.syncer.Sync(ctx, p.PodState, listed)
	if p.ChangedRuntime() {
		p.synced = m.relister.Stamp()
	}
	if err == nil && p.CleanedUp() {
		m.published.CleanUp(p.Pod.UID)
	}
	now := m.clk.Now()
	if err != nil {
		p.syncErr.Next(now, now)
		m.log.Error(err, "Syncing pod failed; will retry", "pod", klog.KObj(p.Pod), "retryIn", p.syncErr.Delay)
		m.rec.Eventf(events.PodReference(p.Pod), corev1.EventTypeWarning, ReasonFailedSync, "Sync", "Error syncing pod, retrying in %v: %v", p.syncErr.Delay, err)
		m.enqueue(syncKey(p.Pod), now.Add(p.syncErr.Delay))
		return
	}
	p.syncErr = backoff.Backoff{}
}

// reap forgets the pod uid once its teardown finished. It runs after the pod's item, where no
// worker holds the pod: only the loop that hands out the items changes the pods map.
func (m *Manager) reap(uid types.UID) {
	p := m.pods[uid]
	if p == nil || !p.Gone {
		return
	}
	m.shared.Lock()
	delete(m.pods, uid)
	m.touched[uid] = true // published as stopped
	m.shared.Unlock()
	m.images.Forget(uid)
}

// applyPulls hands the background pulls that ended to their pods' next syncs, queued now.
func (m *Manager) applyPulls() {
	if !m.background {
		return
	}
	now := m.clk.Now()
	for _, uid := range m.images.Settle(func(uid types.UID) bool { p := m.pods[uid]; return p != nil && !p.Removed }) {
		m.enqueue(syncKey(m.pods[uid].Pod), now)
	}
}

// relistRuntime relists the runtime: orphans are torn down, and the pods whose objects changed are
// synced, at once.
func (m *Manager) relistRuntime(ctx context.Context) {
	r := m.relister.Relist(ctx, func(uid types.UID) bool { return m.pods[uid] != nil })
	now := m.clk.Now()
	for _, o := range r.Orphans {
		p := newPodState(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name, UID: o.UID}}, now)
		p.Removed = true
		m.shared.Lock()
		m.pods[o.UID] = p
		m.shared.Unlock()
	}
	for _, uid := range r.Changed {
		m.enqueue(syncKey(m.pods[uid].Pod), now)
	}
}

// livePods are the admitted pods not being removed, whose requests size the QoS cgroups.
func (m *Manager) livePods() []*corev1.Pod {
	m.shared.Lock()
	defer m.shared.Unlock()
	var out []*corev1.Pod
	for _, p := range m.pods {
		if p.Rejected == "" && !p.Removed {
			out = append(out, p.Pod)
		}
	}
	return out
}
