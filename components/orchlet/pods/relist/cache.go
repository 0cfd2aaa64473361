package relist

import (
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/labels"
)

// Stamp orders the relists and the pod workers' syncs, as the kubelet's pod cache orders them by
// the time each was read or done: a counter rather than the clock, since on a simulated clock a
// sync and the relist after it happen at one instant.
type Stamp uint64

// Pod is what a relist listed of one pod, as the kubelet's pod cache holds its status: its
// sandboxes and containers in the runtime's order. The relist replaces it when they change and
// never changes it, so a sync reads it without a lock.
type Pod struct {
	Sandboxes  []*runtimeapi.PodSandbox
	Containers []*runtimeapi.Container
}

// cache is the pod cache a relist fills (the Relister's mu guards it): each pod's objects as the
// last relist listed them, the container statuses the syncs read since, and the stamp of the
// last relist, the kubelet's global timestamp: every pod's objects are as of it.
type cache struct {
	now      Stamp
	relisted Stamp
	pods     map[types.UID]*Pod
	// statuses are by container id, each read since a relist listed the container in that state.
	statuses map[string]*runtimeapi.ContainerStatus
}

// tick is a new stamp, later than every stamp before it.
func (c *cache) tick() Stamp {
	c.now++
	return c.now
}

// fill keeps what the relist stamped read listed: a pod whose objects (by id and state, in order)
// are those of its entry keeps the entry, one with new objects gets a new one, and a pod no
// longer listed loses its entry, as the PLEG deletes a pod gone from the runtime. A status is
// kept while its container is listed in the state it shows.
func (c *cache) fill(read Stamp, sbs []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) {
	listed := map[types.UID]*Pod{}
	pod := func(uid types.UID) *Pod {
		p := listed[uid]
		if p == nil {
			p = &Pod{}
			listed[uid] = p
		}
		return p
	}
	for _, s := range sbs {
		if uid := types.UID(s.Labels[labels.PodUID]); uid != "" {
			p := pod(uid)
			p.Sandboxes = append(p.Sandboxes, s)
		}
	}
	states := make(map[string]runtimeapi.ContainerState, len(ctrs))
	for _, ct := range ctrs {
		if uid := types.UID(ct.Labels[labels.PodUID]); uid != "" {
			p := pod(uid)
			p.Containers = append(p.Containers, ct)
			states[ct.Id] = ct.State
		}
	}
	for uid, p := range listed {
		if old := c.pods[uid]; old != nil && sameObjects(old, p) {
			listed[uid] = old
		}
	}
	c.pods = listed
	for id, st := range c.statuses {
		if s, ok := states[id]; !ok || s != st.GetState() {
			delete(c.statuses, id)
		}
	}
	c.relisted = read
}

// sameObjects reports whether a and b list the same sandboxes and containers, by id and state, in
// the same order.
func sameObjects(a, b *Pod) bool {
	if len(a.Sandboxes) != len(b.Sandboxes) || len(a.Containers) != len(b.Containers) {
		return false
	}
	for i, s := range a.Sandboxes {
		if s.Id != b.Sandboxes[i].Id || s.State != b.Sandboxes[i].State {
			return false
		}
	}
	for i, ct := range a.Containers {
		if ct.Id != b.Containers[i].Id || ct.State != b.Containers[i].State {
			return false
		}
	}
	return true
}

// Stamp is a stamp later than every relist so far: a pod worker takes one when a sync ends, and
// asks for what was read after it.
func (r *Relister) Stamp() Stamp {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cache.tick()
}

// NewerThan is the kubelet's GetNewerThan without its wait: what the relists read of the pod uid
// when a relist ran after since (the global timestamp: every pod's objects are as of the last
// relist); nil when none did, or when the relists hold nothing of the pod (not yet listed, or
// gone).
func (r *Relister) NewerThan(uid types.UID, since Stamp) *Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cache.relisted > since {
		return r.cache.pods[uid]
	}
	return nil
}

// Status is the status of c a sync read since a relist listed c in its state; nil when none was.
func (r *Relister) Status(c *runtimeapi.Container) *runtimeapi.ContainerStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.cache.statuses[c.Id]; st != nil && st.GetState() == c.State {
		return st
	}
	return nil
}

// KeepStatus keeps st, a container status a sync read, for the syncs after it while the relists
// list its container in the state it shows.
func (r *Relister) KeepStatus(st *runtimeapi.ContainerStatus) {
	if st == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cache.statuses[st.GetId()] = st
}
