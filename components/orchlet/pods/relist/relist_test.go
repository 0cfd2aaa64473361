package relist

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/pods/calls"
	"orch.io/orch/components/orchlet/pods/labels"
)

type runtime struct {
	sbs  []*runtimeapi.PodSandbox
	ctrs []*runtimeapi.Container
}

func (r *runtime) Version(context.Context, string) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{RuntimeName: "fake"}, nil
}

func (r *runtime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return r.sbs, nil
}

func (r *runtime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return r.ctrs, nil
}

func sandbox(id, uid string, state runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{Id: id, State: state, Labels: map[string]string{labels.PodUID: uid, labels.PodNamespace: "ns", labels.PodName: "pod-" + uid}}
}

func container(id, uid string, state runtimeapi.ContainerState) *runtimeapi.Container {
	return &runtimeapi.Container{Id: id, State: state, Labels: map[string]string{labels.PodUID: uid}}
}

// TestRelist follows a node through relists: each row changes what the runtime lists (or the
// sources' readiness) and says which pods changed and which are orphans, and whether the relist
// asked the sources (not when the lists are the last relist's and no orphan waits for them).
func TestRelist(t *testing.T) {
	rt := &runtime{}
	ready, asked := false, false
	r := New(rt, calls.New(clock.NewMock(), time.Minute), klog.Background(), func() bool { asked = true; return ready })
	known := map[types.UID]bool{"a": true, "b": true}
	for _, step := range []struct {
		name    string
		change  func()
		changed []types.UID
		orphans []Orphan
		asks    bool
	}{
		{"a pod's sandbox and container appear", func() {
			rt.sbs = []*runtimeapi.PodSandbox{sandbox("sa", "a", runtimeapi.PodSandboxState_SANDBOX_READY)}
			rt.ctrs = []*runtimeapi.Container{container("ca", "a", runtimeapi.ContainerState_CONTAINER_RUNNING)}
		}, []types.UID{"a"}, nil, true},
		{"nothing new", func() {}, nil, nil, false},
		{"a container exits", func() {
			rt.ctrs = []*runtimeapi.Container{container("ca", "a", runtimeapi.ContainerState_CONTAINER_EXITED)}
		}, []types.UID{"a"}, nil, true},
		{"objects not the agent's are not looked at", func() {
			rt.ctrs = append(rt.ctrs, &runtimeapi.Container{Id: "other", State: runtimeapi.ContainerState_CONTAINER_RUNNING})
		}, nil, nil, true},
		{"an unknown pod waits for the sources", func() {
			rt.sbs = append(rt.sbs, sandbox("sx", "x", runtimeapi.PodSandboxState_SANDBOX_READY))
			rt.ctrs = append(rt.ctrs, container("cx", "x", runtimeapi.ContainerState_CONTAINER_RUNNING))
		}, nil, nil, true},
		{"nothing new, the sources not ready: the unknown pod still waits", func() {}, nil, nil, true},
		{"the sources ready, the unknown pod is an orphan", func() { ready = true },
			[]types.UID{"x"}, []Orphan{{UID: "x", Namespace: "ns", Name: "pod-x"}}, true},
		{"nothing new, no orphan waiting", func() {}, nil, nil, false},
		{"a pod whose container went away, its sandbox left", func() {
			known["x"] = true
			rt.ctrs = rt.ctrs[:1]
			rt.sbs = append(rt.sbs, sandbox("sb", "b", runtimeapi.PodSandboxState_SANDBOX_NOTREADY))
		}, []types.UID{"b", "x"}, nil, true},
		{"a stopped leftover no source names is not an orphan", func() {
			rt.sbs = append(rt.sbs, sandbox("sy", "y", runtimeapi.PodSandboxState_SANDBOX_NOTREADY))
			rt.ctrs = append(rt.ctrs, container("cy", "y", runtimeapi.ContainerState_CONTAINER_EXITED))
		}, nil, nil, true},
		{"its container removed, the leftover is still no pod to sync", func() {
			rt.ctrs = slices.DeleteFunc(rt.ctrs, func(c *runtimeapi.Container) bool { return c.Id == "cy" })
		}, nil, nil, true},
		{"a stopped sandbox with a running container is an orphan, named by its sandbox", func() {
			rt.sbs = append(rt.sbs, sandbox("sz", "z", runtimeapi.PodSandboxState_SANDBOX_NOTREADY))
			rt.ctrs = append(rt.ctrs, container("cz", "z", runtimeapi.ContainerState_CONTAINER_RUNNING))
		}, []types.UID{"z"}, []Orphan{{UID: "z", Namespace: "ns", Name: "pod-z"}}, true},
	} {
		step.change()
		asked = false
		got := r.Relist(context.Background(), func(uid types.UID) bool { return known[uid] })
		slices.Sort(got.Changed)
		if !slices.Equal(got.Changed, step.changed) || !slices.Equal(got.Orphans, step.orphans) || asked != step.asks {
			t.Errorf("%s: changed %v orphans %v, asked the sources %t; want %v %v %t", step.name, got.Changed, got.Orphans, asked, step.changed, step.orphans, step.asks)
		}
	}
	if id := r.ContainerID("c1"); id != "fake://c1" {
		t.Errorf("container ID %q", id)
	}
}

// TestPodCache: what a relist lists goes in the pod cache, as the PLEG's: a pod's entry is given
// only for a relist after the stamp asked with (the kubelet's GetNewerThan and its global
// timestamp), is the same while the pod's objects are, goes when the pod leaves the runtime, and
// a failed relist moves nothing. A container status is kept while its container is listed in the
// state it shows.
func TestPodCache(t *testing.T) {
	rt := &failing{}
	r := New(rt, calls.New(clock.NewMock(), time.Minute), klog.Background(), nil)
	ctx := context.Background()
	all := func(types.UID) bool { return true }
	if p := r.NewerThan("a", 0); p != nil {
		t.Fatalf("before any relist the cache gave %+v", p)
	}
	sa := sandbox("sa", "a", runtimeapi.PodSandboxState_SANDBOX_READY)
	ca := container("ca", "a", runtimeapi.ContainerState_CONTAINER_RUNNING)
	rt.sbs = []*runtimeapi.PodSandbox{sa, sandbox("sb", "b", runtimeapi.PodSandboxState_SANDBOX_READY)}
	rt.ctrs = []*runtimeapi.Container{ca}
	r.Relist(ctx, all)
	p := r.NewerThan("a", 0)
	if p == nil || !slices.Equal(p.Sandboxes, []*runtimeapi.PodSandbox{sa}) || !slices.Equal(p.Containers, []*runtimeapi.Container{ca}) {
		t.Fatalf("after a relist, pod a = %+v, want its sandbox and container", p)
	}
	if b := r.NewerThan("b", 0); b == nil || len(b.Sandboxes) != 1 || len(b.Containers) != 0 {
		t.Errorf("pod b = %+v, want its sandbox alone", b)
	}

	// A sync that changed the pod ends: nothing read before it is given, until the next relist.
	synced := r.Stamp()
	if got := r.NewerThan("a", synced); got != nil {
		t.Errorf("before the next relist the cache gave %+v", got)
	}
	// A relist that finds nothing new moves the global stamp: the entry read before is given.
	r.Relist(ctx, all)
	if got := r.NewerThan("a", synced); got != p {
		t.Errorf("after a relist that found nothing new, pod a = %+v, want the same entry", got)
	}
	// A failed relist moves nothing.
	synced = r.Stamp()
	rt.err = errors.New("runtime down")
	r.Relist(ctx, all)
	if got := r.NewerThan("a", synced); got != nil {
		t.Errorf("after a failed relist the cache gave %+v", got)
	}
	rt.err = nil

	// Statuses: kept while the container is listed in the state they show.
	running := &runtimeapi.ContainerStatus{Id: "ca", State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	r.KeepStatus(running)
	if got := r.Status(ca); got != running {
		t.Errorf("status of ca = %v, want the one kept", got)
	}
	exited := container("ca", "a", runtimeapi.ContainerState_CONTAINER_EXITED)
	if got := r.Status(exited); got != nil {
		t.Errorf("status of ca listed exited = %v, want none: the one kept shows it running", got)
	}
	rt.ctrs = []*runtimeapi.Container{exited}
	r.Relist(ctx, all)
	if got := r.NewerThan("a", synced); got == nil || got == p || got.Containers[0] != exited {
		t.Errorf("after the container exited, pod a = %+v, want a new entry with it exited", got)
	}
	if got := r.Status(ca); got != nil {
		t.Errorf("after the container exited, the running status is still kept: %v", got)
	}

	// The pod leaves the runtime: its entry goes with it.
	rt.sbs, rt.ctrs = rt.sbs[1:], nil
	r.Relist(ctx, all)
	if got := r.NewerThan("a", 0); got != nil {
		t.Errorf("pod a gone from the runtime, the cache still gives %+v", got)
	}
	if got := r.NewerThan("b", 0); got == nil {
		t.Error("pod b, still in the runtime, lost its entry")
	}
}

// failing is a runtime whose lists fail while err is set.
type failing struct {
	runtime
	err error
}

func (f *failing) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	if f.err != nil {
		return nil, f.err
	}
	return f.runtime.ListPodSandbox(ctx, filter)
}
