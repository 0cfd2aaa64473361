package sim

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
)

// TestUnfilteredListsShareTheirRequest: the relist's unfiltered lists, sent with one request each
// for every node, answer what a request of their own is answered, are logged as that request, and
// leave the shared requests as they were; a filtered list still sends its filter.
func TestUnfilteredListsShareTheirRequest(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt, err := fakecri.New(fakecri.Options{Clock: mock, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := rt.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: "app:1"}}); err != nil {
		t.Fatal(err)
	}
	cfg := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "u"}}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: cfg,
		Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: &runtimeapi.ImageSpec{Image: "app:1"}}}); err != nil {
		t.Fatal(err)
	}
	c := inProcess{rt: rt}
	for _, tc := range []struct {
		name       string
		sbFilter   *runtimeapi.PodSandboxFilter
		ctrFilter  *runtimeapi.ContainerFilter
		sandboxes  int
		containers int
	}{
		{"unfiltered", nil, nil, 1, 1},
		{"filtered", &runtimeapi.PodSandboxFilter{Id: "none"}, &runtimeapi.ContainerFilter{PodSandboxId: "none"}, 0, 0},
		{"unfiltered again", nil, nil, 1, 1},
	} {
		since := rt.LastSeq()
		sbs, err := c.ListPodSandbox(ctx, tc.sbFilter)
		if err != nil {
			t.Fatal(err)
		}
		ctrs, err := c.ListContainers(ctx, tc.ctrFilter)
		if err != nil {
			t.Fatal(err)
		}
		wantSbs, _ := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: tc.sbFilter})
		wantCtrs, _ := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: tc.ctrFilter})
		if len(sbs) != tc.sandboxes || len(ctrs) != tc.containers || len(sbs) != len(wantSbs.Items) || len(ctrs) != len(wantCtrs.Containers) {
			t.Fatalf("%s: %d sandboxes and %d containers, want %d and %d", tc.name, len(sbs), len(ctrs), tc.sandboxes, tc.containers)
		}
		for i := range sbs {
			if !proto.Equal(sbs[i], wantSbs.Items[i]) {
				t.Errorf("%s: sandbox %v, want %v", tc.name, sbs[i], wantSbs.Items[i])
			}
		}
		for i := range ctrs {
			if !proto.Equal(ctrs[i], wantCtrs.Containers[i]) {
				t.Errorf("%s: container %v, want %v", tc.name, ctrs[i], wantCtrs.Containers[i])
			}
		}
		logged := rt.Calls(calllog.Filter{Since: since})
		if len(logged) < 2 {
			t.Fatalf("%s: %d calls logged", tc.name, len(logged))
		}
		if want := (&runtimeapi.ListPodSandboxRequest{Filter: tc.sbFilter}); !proto.Equal(logged[0].Message, want) {
			t.Errorf("%s: logged %v, want %v", tc.name, logged[0].Message, want)
		}
		if want := (&runtimeapi.ListContainersRequest{Filter: tc.ctrFilter}); !proto.Equal(logged[1].Message, want) {
			t.Errorf("%s: logged %v, want %v", tc.name, logged[1].Message, want)
		}
		if !proto.Equal(allSandboxes, &runtimeapi.ListPodSandboxRequest{}) || !proto.Equal(allContainers, &runtimeapi.ListContainersRequest{}) {
			t.Fatalf("%s: a shared request changed: %v, %v", tc.name, allSandboxes, allContainers)
		}
	}
}
