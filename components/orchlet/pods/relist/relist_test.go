package relist

import (
	"context"
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
// sources' readiness) and says which pods changed and which are orphans.
func TestRelist(t *testing.T) {
	rt := &runtime{}
	ready := false
	r := New(rt, calls.New(clock.NewMock(), time.Minute), klog.Background(), func() bool { return ready })
	known := map[types.UID]bool{"a": true, "b": true}
	for _, step := range []struct {
		name    string
		change  func()
		changed []types.UID
		orphans []Orphan
	}{
		{"a pod's sandbox and container appear", func() {
			rt.sbs = []*runtimeapi.PodSandbox{sandbox("sa", "a", runtimeapi.PodSandboxState_SANDBOX_READY)}
			rt.ctrs = []*runtimeapi.Container{container("ca", "a", runtimeapi.ContainerState_CONTAINER_RUNNING)}
		}, []types.UID{"a"}, nil},
		{"nothing new", func() {}, nil, nil},
		{"a container exits", func() {
			rt.ctrs = []*runtimeapi.Container{container("ca", "a", runtimeapi.ContainerState_CONTAINER_EXITED)}
		}, []types.UID{"a"}, nil},
		{"objects not the agent's are not looked at", func() {
			rt.ctrs = append(rt.ctrs, &runtimeapi.Container{Id: "other", State: runtimeapi.ContainerState_CONTAINER_RUNNING})
		}, nil, nil},
		{"an unknown pod waits for the sources", func() {
			rt.sbs = append(rt.sbs, sandbox("sx", "x", runtimeapi.PodSandboxState_SANDBOX_READY))
			rt.ctrs = append(rt.ctrs, container("cx", "x", runtimeapi.ContainerState_CONTAINER_RUNNING))
		}, nil, nil},
		{"the sources ready, the unknown pod is an orphan", func() { ready = true },
			[]types.UID{"x"}, []Orphan{{UID: "x", Namespace: "ns", Name: "pod-x"}}},
		{"a pod whose container went away, its sandbox left", func() {
			known["x"] = true
			rt.ctrs = rt.ctrs[:1]
			rt.sbs = append(rt.sbs, sandbox("sb", "b", runtimeapi.PodSandboxState_SANDBOX_NOTREADY))
		}, []types.UID{"b", "x"}, nil},
	} {
		step.change()
		got := r.Relist(context.Background(), func(uid types.UID) bool { return known[uid] })
		slices.Sort(got.Changed)
		if !slices.Equal(got.Changed, step.changed) || !slices.Equal(got.Orphans, step.orphans) {
			t.Errorf("%s: changed %v orphans %v, want %v %v", step.name, got.Changed, got.Orphans, step.changed, step.orphans)
		}
	}
	if id := r.ContainerID("c1"); id != "fake://c1" {
		t.Errorf("container ID %q", id)
	}
}
