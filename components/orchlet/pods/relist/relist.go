// Package relist notices the containers and sandboxes of the agent's pods that changed on their
// own, as Kubernetes' generic PLEG does: each relist lists the runtime (every second, and at once
// after a sync that started containers) and compares each object, by id and state, with the last
// relist. A pod changed when one of its objects is new, changed state or went away; a pod of the
// agent's (labelled with its pod UID) that the pod workers do not hold is an orphan, to tear down,
// but only once every pod source has sent its pods, so that a restarted agent adopts its pods
// rather than killing them. What a relist lists fills the pod cache the pod workers' syncs read,
// as the kubelet's pod workers read the PLEG's (cache.go), so a sync with nothing to do asks the
// runtime nothing.
package relist

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/pods/calls"
	"orch.io/orch/components/orchlet/pods/labels"
)

// Runtime is the runtime as a relist lists it; cri.RuntimeService is one.
type Runtime interface {
	Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error)
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}

// Relister relists the runtime; one relist runs at a time.
type Relister struct {
	rt    Runtime
	calls *calls.Tracker
	log   klog.Logger
	// sourcesReady, when set, tells whether every pod source has sent its pods; until then the
	// runtime's pods no source names are left alone, not torn down as orphans.
	sourcesReady func() bool

	mu          sync.Mutex
	runtimeName string // from Version, the prefix of container IDs in status
	cache       cache  // what the relists read, for the pod workers' syncs

	seen     map[string]seenObject // by id, the runtime objects of the agent's pods at the last relist
	relisted map[string]seenObject // the map the next relist fills, reused
	lastList []listed              // every object the last relist saw, in its order
	// orphansDeferred says a relist left orphans for once the sources are ready.
	orphansDeferred bool
}

// New is a relister of rt whose calls c bounds; sourcesReady may be nil (the sources are ready).
func New(rt Runtime, c *calls.Tracker, log klog.Logger, sourcesReady func() bool) *Relister {
	return &Relister{rt: rt, calls: c, log: log, sourcesReady: sourcesReady, seen: map[string]seenObject{}, relisted: map[string]seenObject{},
		cache: cache{statuses: map[string]*runtimeapi.ContainerStatus{}}}
}

// ContainerID is the ID a status shows for the runtime's container id: <runtime>://<id>.
func (r *Relister) ContainerID(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runtimeName + "://" + id
}

// Orphan is a pod of the agent's in the runtime that no source names.
type Orphan struct {
	UID             types.UID
	Namespace, Name string // its sandbox's labels; empty when only its containers are left
}

// Result is what a relist found.
type Result struct {
	// Orphans are the pods to tear down, in the order the runtime listed them.
	Orphans []Orphan
	// Changed are the pods, orphans included, whose objects changed: their syncs look again.
	Changed []types.UID
}

// Relist lists the runtime and reports the pods whose objects changed since the last relist, and
// the pods of the agent's that known (the pod workers' pods) does not hold; what it listed of
// each pod goes in the pod cache (NewerThan), stamped before the lists were asked for, as the
// PLEG's timestamp. The first relist asks the runtime its name. A failed list is logged, reports
// nothing and leaves the cache as it was.
func (r *Relister) Relist(ctx context.Context, known func(types.UID) bool) Result {
	r.mu.Lock()
	named := r.runtimeName != ""
	read := r.cache.tick()
	r.mu.Unlock()
	if !named {
		if err := r.calls.Request(ctx, func(ctx context.Context) error {
			v, err := r.rt.Version(ctx, "v1")
			r.mu.Lock()
			r.runtimeName = v.GetRuntimeName()
			r.mu.Unlock()
			return err
		}); err != nil {
			r.log.Error(err, "Asking the runtime its version failed")
			return Result{}
		}
	}
	var sbs []*runtimeapi.PodSandbox
	var ctrs []*runtimeapi.Container
	err := r.calls.Request(ctx, func(ctx context.Context) (err error) {
		sbs, err = r.rt.ListPodSandbox(ctx, nil)
		return err
	})
	if err == nil {
		err = r.calls.Request(ctx, func(ctx context.Context) (err error) {
			ctrs, err = r.rt.ListContainers(ctx, nil)
			return err
		})
	}
	if err != nil {
		r.log.Error(err, "Relisting the runtime failed")
		return Result{}
	}
	same := r.sameAsLastRelist(sbs, ctrs)
	r.mu.Lock()
	if same {
		r.cache.relisted = read
	} else {
		r.cache.fill(read, sbs, ctrs)
	}
	r.mu.Unlock()
	if same && !r.orphansDeferred {
		return Result{}
	}
	// Asked only when the answer matters: a quiet node's relist does not need the sources' looks,
	// which were a tenth of its CPU with 10,000 simulated nodes.
	ready := r.sourcesReady == nil || r.sourcesReady()
	if same && !ready {
		return Result{}
	}
	r.orphansDeferred = false
	// Each object is compared with the last relist by id: a pod changed when one of its objects
	// is new, changed state or went away. Two maps are reused in turn, so a relist that finds
	// nothing new allocates almost nothing.
	cur := r.relisted
	clear(cur)
	var out Result
	var changed, gone, orphans map[types.UID]bool
	mark := func(uid types.UID) {
		if changed == nil {
			changed = map[types.UID]bool{}
		}
		changed[uid] = true
	}
	// A pod no source names is an orphan only while something of it runs (a ready sandbox or a
	// running container), as the kubelet's housekeeping kills only the runtime's running pods and
	// leaves a stopped leftover to container GC: a pod torn down is not torn down again at each
	// relist that sees something change.
	var running map[types.UID]bool
	run := func(uid string) {
		if uid != "" {
			if running == nil {
				running = map[types.UID]bool{}
			}
			running[types.UID(uid)] = true
		}
	}
	for _, s := range sbs {
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			run(s.Labels[labels.PodUID])
		}
	}
	for _, c := range ctrs {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			run(c.Labels[labels.PodUID])
		}
	}
	observe := func(id string, o seenObject, namespace, name string) {
		cur[id] = o
		if !known(o.uid) && !orphans[o.uid] {
			if !running[o.uid] {
				return
			}
			if !ready {
				// Perhaps a source not yet heard from names it: judged once every source has
				// spoken, so a restarted agent adopts its pods rather than killing them.
				r.orphansDeferred = true
				return
			}
			// An orphan: a pod of ours no source names, to tear down.
			if orphans == nil {
				orphans = map[types.UID]bool{}
			}
			orphans[o.uid] = true
			out.Orphans = append(out.Orphans, Orphan{UID: o.uid, Namespace: namespace, Name: name})
			mark(o.uid)
			return
		}
		if r.seen[id] != o {
			mark(o.uid)
		}
	}
	for _, s := range sbs {
		if uid := types.UID(s.Labels[labels.PodUID]); uid != "" {
			observe(s.Id, seenObject{uid: uid, sandbox: true, state: int32(s.State)}, s.Labels[labels.PodNamespace], s.Labels[labels.PodName])
		}
	}
	for _, c := range ctrs {
		if uid := types.UID(c.Labels[labels.PodUID]); uid != "" {
			observe(c.Id, seenObject{uid: uid, state: int32(c.State)}, "", "")
		}
	}
	for id, o := range r.seen {
		if _, ok := cur[id]; !ok {
			if gone == nil {
				gone = map[types.UID]bool{}
			}
			gone[o.uid] = true
		}
	}
	if len(gone) > 0 {
		// A pod all of whose objects went away is not synced for it: nothing of it is left to look at.
		for _, o := range cur {
			if gone[o.uid] && (orphans[o.uid] || known(o.uid)) {
				mark(o.uid)
			}
		}
	}
	for uid := range changed {
		out.Changed = append(out.Changed, uid)
	}
	r.seen, r.relisted = cur, r.seen
	return out
}

// AddPods adds to set the UIDs of the agent's pods the last relist found in the runtime, the
// orphans among them. Call it where Relist is called, never beside it.
func (r *Relister) AddPods(set map[types.UID]bool) {
	for _, o := range r.seen {
		set[o.uid] = true
	}
}

// Holds tells whether the last relist found objects of the pod uid in the runtime. Call it where
// Relist is called, never beside it.
func (r *Relister) Holds(uid types.UID) bool {
	for _, o := range r.seen {
		if o.uid == uid {
			return true
		}
	}
	return false
}

// sameAsLastRelist reports whether the runtime listed the same objects in the same order and
// states as at the last relist, the usual answer on a quiet node, and otherwise remembers this
// list for the next relist to compare with.
func (r *Relister) sameAsLastRelist(sbs []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) bool {
	same := len(r.lastList) == len(sbs)+len(ctrs)
	for i := 0; same && i < len(sbs); i++ {
		same = r.lastList[i] == listed{id: sbs[i].Id, state: int32(sbs[i].State)}
	}
	for i := 0; same && i < len(ctrs); i++ {
		same = r.lastList[len(sbs)+i] == listed{id: ctrs[i].Id, state: 100 + int32(ctrs[i].State)}
	}
	if same {
		return true
	}
	r.lastList = r.lastList[:0]
	for _, s := range sbs {
		r.lastList = append(r.lastList, listed{id: s.Id, state: int32(s.State)})
	}
	for _, c := range ctrs {
		r.lastList = append(r.lastList, listed{id: c.Id, state: 100 + int32(c.State)})
	}
	return false
}

// listed is one object of a relist, in the order the runtime listed it; containers' states are
// offset by 100 so that no sandbox state equals a container state.
type listed struct {
	id    string
	state int32
}

// seenObject is what a relist remembers of one sandbox or container.
type seenObject struct {
	uid     types.UID
	sandbox bool
	state   int32
}
