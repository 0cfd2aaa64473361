package status

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Cache holds the pods the pod workers published last, with their statuses, for readers on any
// goroutine: the agent's server, the eviction manager, the simulator.
type Cache struct {
	mu        sync.Mutex
	published []*corev1.Pod // shared, never modified: Pods hands out copies
	stopping  map[types.UID]bool
	evicting  map[types.UID]bool // asked to be evicted: no longer active
	cleanedUp map[types.UID]bool // evicted, their containers and sandboxes stopped
	version   uint64
	changed   chan struct{} // closed and replaced at each publish
}

// NewCache is an empty cache.
func NewCache() *Cache {
	return &Cache{evicting: map[types.UID]bool{}, cleanedUp: map[types.UID]bool{}, changed: make(chan struct{})}
}

// Publish replaces the published pods, in namespace/name order, and the pods being torn down
// (stopping). known says whether the pod workers still hold a pod, and whether they hold it evicted:
// a pod asked to be evicted stays inactive until it is published Failed or gone, and one cleaned up
// is remembered until it is gone.
func (c *Cache) Publish(pods []*corev1.Pod, stopping map[types.UID]bool, known func(types.UID) (held, evicted bool)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.published, c.stopping = pods, stopping
	for uid := range c.evicting {
		// Published Failed (or gone): the pod is no longer active by its status.
		if held, evicted := known(uid); !held || evicted {
			delete(c.evicting, uid)
		}
	}
	for uid := range c.cleanedUp {
		if held, _ := known(uid); !held {
			delete(c.cleanedUp, uid) // gone: CleanedUp says so without it
		}
	}
	c.version++
	close(c.changed)
	c.changed = make(chan struct{})
}

// Pods is every pod published with its latest status, ordered by namespace and name.
func (c *Cache) Pods() []corev1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]corev1.Pod, len(c.published))
	for i, p := range c.published {
		p.DeepCopyInto(&out[i])
	}
	return out
}

// Shared is every pod published, as Pods, without copying them: the pods are shared with every
// other reader and must not be modified. A pod the pod workers did not touch since the last
// publish is the same pointer as before, so a reader can tell it unchanged without comparing it.
func (c *Cache) Shared() []*corev1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*corev1.Pod(nil), c.published...)
}

// Version changes whenever what Pods returns may have changed.
func (c *Cache) Version() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// Changed returns a channel closed when what Pods returns next changes.
func (c *Cache) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// Stopped tells whether the pod uid has no containers or sandbox of the agent's left: it was
// never published, or its removal finished tearing it down.
func (c *Cache) Stopped(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.stopping[uid] && !c.publishedLocked(uid)
}

// Evicting marks the pod uid inactive from now on, as the eviction manager asked; Unevicting
// forgets it, for a pod that cannot be evicted.
func (c *Cache) Evicting(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evicting[uid] = true
}

// Unevicting: see Evicting.
func (c *Cache) Unevicting(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.evicting, uid)
}

// CleanUp records that the evicted pod uid has had its containers and sandboxes stopped.
func (c *Cache) CleanUp(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cleanedUp[uid] = true
}

// ActivePods are the published pods that run or may run: not rejected, evicted, finished or
// being removed; in namespace/name order. They are shared and must not be modified.
func (c *Cache) ActivePods() []*corev1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*corev1.Pod, 0, len(c.published))
	for _, p := range c.published {
		if c.evicting[p.UID] || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		out = append(out, p)
	}
	return out
}

// CleanedUp tells whether the pod uid evicted earlier has had its containers and sandboxes
// stopped (Kubernetes' podResourcesAreReclaimed, as the eviction manager waits on it), or is not
// the pod workers' at all.
func (c *Cache) CleanedUp(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cleanedUp[uid] {
		return true
	}
	return !c.evicting[uid] && !c.stopping[uid] && !c.publishedLocked(uid)
}

func (c *Cache) publishedLocked(uid types.UID) bool {
	for _, p := range c.published {
		if p.UID == uid {
			return true
		}
	}
	return false
}
