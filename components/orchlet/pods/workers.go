package pods

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
	"k8s.io/apimachinery/pkg/types"
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
		if k.kind == kindRelist || k.kind == kindResync {
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
