package fakecri

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	cri "k8s.io/cri-client/pkg"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/fakecritest/fixture"
	"orch.io/orch/fakecri/script"
)

// serve runs rt on a unix socket and returns its endpoint.
func serve(t testing.TB, rt *Runtime) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "cri.sock")
	lis, err := Listen("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewGRPCServer(rt)
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return "unix://" + sock
}

func clients(t testing.TB, endpoint string, streaming bool) (internalapi.RuntimeService, internalapi.ImageManagerService) {
	t.Helper()
	ctx := context.Background()
	rs, err := cri.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(10 * time.Second).
		WithTracerProvider(nil).WithUseStreaming(streaming).Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	is, err := cri.NewRemoteImageServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(10 * time.Second).
		WithTracerProvider(nil).WithUseStreaming(streaming).Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close(ctx); is.Close(ctx) })
	return rs, is
}

func TestGRPCStreamingListsAndEvents(t *testing.T) {
	mock := clock.NewMock()
	mock.Set(fixture.Epoch)
	rt, err := New(Options{Clock: mock, Script: &script.Script{Containers: []script.ContainerRule{
		{Match: script.ContainerMatch{Name: "c1"}, Exit: &script.ExitSpec{After: script.Duration(5 * time.Second), Code: 1}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	ep := serve(t, rt)
	rs, is := clients(t, ep, true)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	events := make(chan *runtimeapi.ContainerEventResponse, 100)
	connected := make(chan struct{})
	go rs.GetContainerEvents(ctx, events, func(runtimeapi.RuntimeService_GetContainerEventsClient) { close(connected) })
	<-connected
	// the stream is registered once the call log shows it
	waitFor(t, func() bool { return len(rt.Calls(calllog.Filter{Method: "GetContainerEvents"})) == 1 })
	waitFor(t, func() bool {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		return len(rt.subs) == 1
	})

	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "busybox"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	var ids, pods []string
	for i := 0; i < 1200; i++ { // more than one stream chunk, 20 containers a pod
		if i%20 == 0 {
			pod, err := rs.RunPodSandbox(ctx, fixture.PodConfig(fmt.Sprintf("p%d", i/20), nil), "")
			if err != nil {
				t.Fatal(err)
			}
			pods = append(pods, pod)
		}
		id, err := rs.CreateContainer(ctx, pods[len(pods)-1], fixture.ContainerConfig(fmt.Sprintf("c%d", i), "busybox", 0), nil)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rs.StartContainer(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	list, err := rs.ListContainers(ctx, nil)
	if err != nil || len(list) != 1200 || list[0].Id != ids[0] || list[1199].Id != ids[1199] {
		t.Fatalf("streamed list: %d %v", len(list), err)
	}
	if got := rt.Calls(calllog.Filter{Method: "StreamContainers"}); len(got) != 1 {
		t.Fatalf("the client did not stream: %+v", got)
	}
	stats, err := rs.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil || len(stats) != 1200 {
		t.Fatalf("stats %d %v", len(stats), err)
	}
	sbs, err := rs.ListPodSandbox(ctx, nil)
	if err != nil || len(sbs) != 60 {
		t.Fatal(sbs, err)
	}
	imgs, err := is.ListImages(ctx, nil)
	if err != nil || len(imgs) != 2 {
		t.Fatal(imgs, err)
	}
	if _, err := rs.ListPodSandboxStats(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if m, err := rs.ListPodSandboxMetrics(ctx); err != nil || len(m) != 60 || len(m[0].ContainerMetrics) != 1 {
		t.Fatal(m, err)
	}

	for _, m := range []string{"StreamPodSandboxes", "StreamContainers", "StreamContainerStats", "StreamPodSandboxStats", "StreamImages", "StreamPodSandboxMetrics"} {
		if got := rt.Calls(calllog.Filter{Method: m}); len(got) != 1 || got[0].Code != "OK" {
			t.Errorf("%s: %+v", m, got)
		}
	}

	mock.Add(5 * time.Second) // c1 exits by itself
	want := 2*60 + 1200 + 2   // sandboxes created+started, creates, c1 started+stopped
	got := map[runtimeapi.ContainerEventType]int{}
	var last *runtimeapi.ContainerEventResponse
	for i := 0; i < want; i++ {
		select {
		case ev := <-events:
			got[ev.ContainerEventType]++
			last = ev
		case <-ctx.Done():
			t.Fatalf("only %d of %d events: %v", i, want, got)
		}
	}
	if last.ContainerId != ids[1] || last.ContainerEventType != runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT ||
		last.CreatedAt != fixture.Epoch.Add(5*time.Second).UnixNano() {
		t.Fatalf("last event %v", last)
	}
	if err := rt.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
}

// Many goroutines over gRPC and in-process at once; run with -race.
func TestConcurrentClients(t *testing.T) {
	rt, err := New(Options{Script: &script.Script{Containers: []script.ContainerRule{
		{Match: script.ContainerMatch{Name: "short-*"}, Exit: &script.ExitSpec{After: script.Duration(time.Millisecond), Code: 0}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	ep := serve(t, rt)
	rs, is := clients(t, ep, false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	evCtx, evCancel := context.WithCancel(ctx)
	defer evCancel()
	evs := rt.Subscribe(evCtx)
	go func() {
		for range evs {
		}
	}()
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "busybox"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 16, 15
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	allIDs := make(chan string, workers*rounds*2)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				name := fmt.Sprintf("pod-%d-%d", w, i)
				pod, err := rs.RunPodSandbox(ctx, fixture.PodConfig(name, nil), "")
				if err != nil {
					errs <- err
					return
				}
				allIDs <- pod
				cname := "app"
				if i%2 == 0 {
					cname = "short-app"
				}
				id, err := rs.CreateContainer(ctx, pod, fixture.ContainerConfig(cname, "busybox", 0), nil)
				if err != nil {
					errs <- err
					return
				}
				allIDs <- id
				if err := rs.StartContainer(ctx, id); err != nil {
					errs <- err
					return
				}
				if _, err := rs.ContainerStatus(ctx, id, false); err != nil {
					errs <- err
				}
				if _, err := rs.ListContainers(ctx, nil); err != nil {
					errs <- err
				}
				if _, err := rt.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{}); err != nil {
					errs <- err
				}
				if _, err := is.ImageFsInfo(ctx); err != nil {
					errs <- err
				}
				_ = rt.State()
				// another goroutine may race us to the stop; both must succeed
				if err := rs.StopContainer(ctx, id, 0); err != nil {
					errs <- err
				}
				if err := rs.RemoveContainer(ctx, id); err != nil {
					errs <- err
				}
				if err := rs.StopPodSandbox(ctx, pod); err != nil {
					errs <- err
				}
				if err := rs.RemovePodSandbox(ctx, pod); err != nil {
					errs <- err
				}
			}
		}(w)
	}
	// a script change in the middle of it all
	go func() {
		for i := 0; i < 20; i++ {
			rt.SetScript(&script.Script{Faults: []script.FaultRule{{Method: "Version", Latency: script.Duration(time.Microsecond)}}})
			rt.Calls(calllog.Filter{Method: "Create*"})
		}
	}()
	wg.Wait()
	close(errs)
	close(allIDs)
	for err := range errs {
		t.Error(err)
	}
	seen := map[string]bool{}
	for id := range allIDs {
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
	}
	if n := len(rt.State().Containers) + len(rt.State().Sandboxes); n != 0 {
		t.Fatalf("%d objects left", n)
	}
	if rt.InFlight() != 0 {
		t.Fatalf("in flight: %d", rt.InFlight())
	}
}

func TestGRPCErrorsKeepCodes(t *testing.T) {
	rt, _ := New(Options{Script: &script.Script{Faults: []script.FaultRule{{Method: "ListImages", Hang: true}}}})
	rs, is := clients(t, serve(t, rt), false)
	ctx := context.Background()
	_, err := rs.ContainerStatus(ctx, "missing", false)
	if status.Code(err) != codes.NotFound {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = is.ListImages(short, nil)
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return rt.InFlight() == 0 })
	c := rt.Calls(calllog.Filter{Method: "ListImages"})
	if len(c) != 1 || c[0].Code != "DeadlineExceeded" || c[0].Fault != "faults[0]" {
		t.Fatalf("%+v", c)
	}
}

// Large ListContainers answers go out from cached encodings; they must be
// what proto would send, and follow every change.
func TestWireEncodingMatchesProto(t *testing.T) {
	rt, _ := New(Options{})
	populate(t, rt, 30, 10)
	client := benchClient(t, rt)
	ctx := context.Background()
	check := func() {
		t.Helper()
		want, _ := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		got, err := client.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(want, got) || len(got.Containers) != 300 {
			t.Fatalf("wire answer differs from proto (%d containers)", len(got.Containers))
		}
	}
	check()
	ids := rt.State().Containers
	for _, c := range ids[:50] {
		if _, err := rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: c.ID}); err != nil {
			t.Fatal(err)
		}
	}
	rt.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: ids[60].ID, Annotations: map[string]string{"x": "y"}})
	check()
	got, _ := client.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if got.Containers[0].State != runtimeapi.ContainerState_CONTAINER_EXITED || got.Containers[60].Annotations["x"] != "y" {
		t.Fatal("stale cached encoding")
	}
}

// Every call keeps its whole request, so a test can compare every field the caller sent.
func TestCallsKeepTheWholeRequest(t *testing.T) {
	rt, err := New(Options{Clock: clock.NewMock()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "u"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "/orchpods/burstable/podu",
			Resources: &runtimeapi.LinuxContainerResources{CpuShares: 256, Unified: map[string]string{"memory.oom.group": "1"}}},
	}
	if _, err := rt.RunPodSandbox(context.Background(), &runtimeapi.RunPodSandboxRequest{Config: cfg}); err != nil {
		t.Fatal(err)
	}
	cfg.Linux.CgroupParent = "changed after the call"
	calls := rt.Calls(calllog.Filter{Method: "RunPodSandbox"})
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	got := calls[0].Message.(*runtimeapi.RunPodSandboxRequest).GetConfig().GetLinux()
	if got.GetCgroupParent() != "/orchpods/burstable/podu" || got.GetResources().GetCpuShares() != 256 || got.GetResources().GetUnified()["memory.oom.group"] != "1" {
		t.Errorf("recorded %v", got)
	}
}
