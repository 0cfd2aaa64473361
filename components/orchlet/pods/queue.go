package pods

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/orchlet/pods/prober"
)

type kind int

// Kinds in the order they run when due at the same time for the same pod.
const (
	kindRelist kind = iota
	kindResync
	kindHousekeeping
	kindSync
	kindProbe
)

// itemKey names one piece of work; the queue holds each at most once, at its earliest due time.
type itemKey struct {
	kind      kind
	namespace string
	name      string
	uid       types.UID
	container string
	probe     prober.Type // for kindProbe: which of the container's probes
}

// enqueue makes k due at t, or earlier if it is already queued for an earlier time.
func (m *Manager) enqueue(k itemKey, t time.Time) {
	m.shared.Lock()
	defer m.shared.Unlock()
	m.enqueueLocked(k, t)
}

// enqueueLocked is enqueue with m.shared held.
func (m *Manager) enqueueLocked(k itemKey, t time.Time) {
	if due, ok := m.queue[k]; ok && !t.Before(due) {
		return
	}
	m.queue[k] = t
	m.order.push(dueItem{due: t, key: k})
	if len(m.order) > 2*len(m.queue)+64 {
		m.order = m.order[:0]
		for k, due := range m.queue {
			m.order.push(dueItem{due: due, key: k})
		}
	}
}

// dueItem is a queue item at the due time it was queued for.
type dueItem struct {
	due time.Time
	key itemKey
}

// dueHeap orders the queue's items as popDue takes them, so the first is found without looking
// at every item (Step, Idle and NextDeadline each did, several times a simulated second for every
// pod of a node). An entry is stale once its item has left the queue or was queued again for an
// earlier time: stale entries are dropped when they come first, and all at once when they
// outnumber the queue's items. A binary heap on the slice (container/heap's, without boxing each
// item in an interface).
type dueHeap []dueItem

func (h dueHeap) less(i, j int) bool { return before(h[i].due, h[i].key, h[j].due, h[j].key) }

func (h *dueHeap) push(x dueItem) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		parent := (i - 1) / 2
		if !s.less(i, parent) {
			break
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

// pop drops the first item.
func (h *dueHeap) pop() {
	s := *h
	last := len(s) - 1
	s[0] = s[last]
	s[last] = dueItem{}
	s = s[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(s) && s.less(l, least) {
			least = l
		}
		if r < len(s) && s.less(r, least) {
			least = r
		}
		if least == i {
			break
		}
		s[i], s[least] = s[least], s[i]
		i = least
	}
	*h = s
}

// firstLocked is the queue's first item in popDue's order; false when the queue is empty. It
// needs m.shared held.
func (m *Manager) firstLocked() (dueItem, bool) {
	for len(m.order) > 0 {
		e := m.order[0]
		if m.firstLive {
			return e, true
		}
		if due, ok := m.queue[e.key]; ok && due.Equal(e.due) {
			m.firstLive = true
			return e, true
		}
		m.order.pop()
	}
	return dueItem{}, false
}

// popDue removes and returns the first item due by now in the stable order: due time, then pod
// namespace/name, then container name, then kind, then UID.
func (m *Manager) popDue(now time.Time) (itemKey, bool) {
	return m.popDueWhere(now, nil)
}

// popDueWhere is popDue among the items ok accepts (nil: all).
func (m *Manager) popDueWhere(now time.Time, ok func(itemKey) bool) (itemKey, bool) {
	m.shared.Lock()
	defer m.shared.Unlock()
	if ok == nil {
		first, found := m.firstLocked()
		if !found || first.due.After(now) {
			return itemKey{}, false
		}
		m.order.pop()
		delete(m.queue, first.key)
		m.firstLive = false
		return first.key, true
	}
	var best itemKey
	var bestDue time.Time
	found := false
	for k, due := range m.queue {
		if due.After(now) || (ok != nil && !ok(k)) {
			continue
		}
		if !found || before(due, k, bestDue, best) {
			best, bestDue, found = k, due, true
		}
	}
	if found {
		delete(m.queue, best)
		m.firstLive = false
	}
	return best, found
}

// syncKey is the item of the pod's sync.
func syncKey(pod *corev1.Pod) itemKey {
	return itemKey{kind: kindSync, namespace: pod.Namespace, name: pod.Name, uid: pod.UID}
}

// probeKey is the item of a probe of the pod's container.
func probeKey(pod *corev1.Pod, container string, t prober.Type) itemKey {
	return itemKey{kind: kindProbe, namespace: pod.Namespace, name: pod.Name, uid: pod.UID, container: container, probe: t}
}

// workQueue is the queue as a pod's sync sees it.
type workQueue struct{ m *Manager }

func (q workQueue) Sync(pod *corev1.Pod, t time.Time) { q.m.enqueue(syncKey(pod), t) }

func (q workQueue) Probe(pod *corev1.Pod, container string, probe prober.Type, t time.Time) {
	q.m.enqueue(probeKey(pod, container, probe), t)
}

func (q workQueue) Unprobe(pod *corev1.Pod, container string, probe prober.Type) {
	q.m.dequeue(probeKey(pod, container, probe))
}

func (q workQueue) Touch(uid types.UID) { q.m.touch(uid) }

// dequeue drops k from the queue.
func (m *Manager) dequeue(k itemKey) {
	m.shared.Lock()
	defer m.shared.Unlock()
	delete(m.queue, k)
	m.firstLive = false
}

// touch marks the pod uid for the next publish.
func (m *Manager) touch(uid types.UID) {
	m.shared.Lock()
	defer m.shared.Unlock()
	m.touched[uid] = true
}

// pod is the state of the pod uid, nil when the manager has none.
func (m *Manager) pod(uid types.UID) *podState {
	m.shared.Lock()
	defer m.shared.Unlock()
	return m.pods[uid]
}

func before(da time.Time, a itemKey, db time.Time, b itemKey) bool {
	if !da.Equal(db) {
		return da.Before(db)
	}
	if a.namespace != b.namespace {
		return a.namespace < b.namespace
	}
	if a.name != b.name {
		return a.name < b.name
	}
	if a.container != b.container {
		return a.container < b.container
	}
	if a.kind != b.kind {
		return a.kind < b.kind
	}
	if a.probe != b.probe {
		return a.probe < b.probe
	}
	return a.uid < b.uid
}

// handoff is a list other goroutines add to and Step takes whole.
type handoff[T any] struct {
	mu    sync.Mutex
	items []T
}

func (h *handoff[T]) add(items ...T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.items = append(h.items, items...)
}

// putBack returns items not yet handled to the front of the list.
func (h *handoff[T]) putBack(items ...T) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.items = append(append([]T(nil), items...), h.items...)
}

func (h *handoff[T]) take() []T {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := h.items
	h.items = nil
	return out
}

// holds tells whether an item waiting matches f.
func (h *handoff[T]) holds(f func(T) bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.ContainsFunc(h.items, f)
}

func (h *handoff[T]) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.items)
}

// poke wakes Run if it is waiting for the clock.
func (m *Manager) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}
