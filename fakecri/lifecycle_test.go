package fakecri

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/fakecritest/fixture"
	"orch.io/orch/fakecri/script"
)

// Every RPC of both services is a method of Runtime itself, so the
// Unimplemented servers embedded for gRPC's sake hide nothing.
func TestRuntimeDefinesEveryRPC(t *testing.T) {
	if len(script.Methods) != int(numMethods) {
		t.Fatalf("script.Methods names %d methods, the runtime numbers %d", len(script.Methods), numMethods)
	}
	rt := reflect.TypeOf(&Runtime{})
	for _, iface := range []reflect.Type{
		reflect.TypeOf((*runtimeapi.RuntimeServiceServer)(nil)).Elem(),
		reflect.TypeOf((*runtimeapi.ImageServiceServer)(nil)).Elem(),
	} {
		for i := 0; i < iface.NumMethod(); i++ {
			m := iface.Method(i)
			if !m.IsExported() {
				continue
			}
			got, ok := rt.MethodByName(m.Name)
			if !ok {
				t.Errorf("Runtime lacks %s.%s", iface.Name(), m.Name)
				continue
			}
			if got.Type.NumIn()-1 != m.Type.NumIn() {
				t.Errorf("%s has the wrong signature", m.Name)
			}
			found := false
			for _, n := range script.Methods {
				if n == m.Name {
					found = true
				}
			}
			if !found {
				t.Errorf("%s has no entry in script.Methods", m.Name)
			}
		}
	}
}

func TestContainerLifecycle(t *testing.T) {
	f := newFixture(t, nil)
	imageRef := f.Pull("busybox")
	if !strings.HasPrefix(imageRef, "sha256:") || len(imageRef) != 71 {
		t.Fatalf("image ref %q", imageRef)
	}
	pod := f.RunPod("web", map[string]string{"app": "web"})
	ps, err := f.RT.PodSandboxStatus(f.Ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: pod, Verbose: true})
	if err != nil {
		t.Fatal(err)
	}
	if ps.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY || ps.Status.Network.Ip != "10.88.0.2" ||
		ps.Status.CreatedAt != fixture.Epoch.UnixNano() || ps.Status.Labels["app"] != "web" || ps.Info["info"] == "" {
		t.Fatalf("sandbox status %v", ps)
	}
	if ps.Status.Linux.Namespaces.Options.Pid != runtimeapi.NamespaceMode_CONTAINER {
		t.Fatalf("namespace options not echoed: %v", ps.Status.Linux)
	}

	f.Mock.Add(time.Second)
	cid := f.Create(pod, "app", imageRef, 0)
	st := f.Status(cid)
	if st.State != runtimeapi.ContainerState_CONTAINER_CREATED || st.CreatedAt != fixture.Epoch.Add(time.Second).UnixNano() ||
		st.StartedAt != 0 || st.Image.Image != "docker.io/library/busybox:latest" ||
		!strings.HasPrefix(st.ImageRef, "docker.io/library/busybox@sha256:") || st.ImageId != imageRef ||
		st.LogPath != "/var/log/pods/default_web_uid-web/app/0.log" || st.Image.UserSpecifiedImage != imageRef {
		t.Fatalf("created status %v", st)
	}

	// removing or stopping a created container is fine, starting twice is not
	f.Mock.Add(time.Second)
	f.Start(cid)
	_, err = f.RT.StartContainer(f.Ctx, &runtimeapi.StartContainerRequest{ContainerId: cid})
	wantCode(t, err, codes.FailedPrecondition)
	st = f.Status(cid)
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.StartedAt != fixture.Epoch.Add(2*time.Second).UnixNano() {
		t.Fatalf("running status %v", st)
	}

	// stop with a grace period: the default container exits on SIGTERM at once
	f.Mock.Add(time.Minute)
	if _, err := f.RT.StopContainer(f.Ctx, &runtimeapi.StopContainerRequest{ContainerId: cid, Timeout: 30}); err != nil {
		t.Fatal(err)
	}
	st = f.Status(cid)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 0 || st.Reason != "Completed" ||
		st.FinishedAt != fixture.Epoch.Add(62*time.Second).UnixNano() {
		t.Fatalf("exited status %v", st)
	}
	// idempotent stop
	if _, err := f.RT.StopContainer(f.Ctx, &runtimeapi.StopContainerRequest{ContainerId: cid}); err != nil {
		t.Fatal(err)
	}
	// stopping an unknown container or sandbox succeeds, as the CRI asks
	if _, err := f.RT.StopContainer(f.Ctx, &runtimeapi.StopContainerRequest{ContainerId: "nope"}); err != nil {
		t.Fatal("stop of an unknown container:", err)
	}
	if _, err := f.RT.StopPodSandbox(f.Ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: "nope"}); err != nil {
		t.Fatal("stop of an unknown sandbox:", err)
	}

	if _, err := f.RT.StopPodSandbox(f.Ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: pod}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.RT.StopPodSandbox(f.Ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: pod}); err != nil {
		t.Fatal(err)
	}
	_, err = f.RT.CreateContainer(f.Ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: fixture.ContainerConfig("late", imageRef, 0)})
	wantCode(t, err, codes.FailedPrecondition)

	if _, err := f.RT.RemoveContainer(f.Ctx, &runtimeapi.RemoveContainerRequest{ContainerId: cid}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.RT.RemoveContainer(f.Ctx, &runtimeapi.RemoveContainerRequest{ContainerId: cid}); err != nil {
		t.Fatal("second remove:", err)
	}
	_, err = f.RT.ContainerStatus(f.Ctx, &runtimeapi.ContainerStatusRequest{ContainerId: cid})
	wantCode(t, err, codes.NotFound)
	if _, err := f.RT.RemovePodSandbox(f.Ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: pod}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.RT.RemovePodSandbox(f.Ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: pod}); err != nil {
		t.Fatal(err)
	}
	l, _ := f.RT.ListPodSandbox(f.Ctx, &runtimeapi.ListPodSandboxRequest{})
	if len(l.Items) != 0 {
		t.Fatalf("sandboxes left: %v", l.Items)
	}
	// the pause image arrived with the sandbox, pinned
	imgs, _ := f.RT.ListImages(f.Ctx, &runtimeapi.ListImagesRequest{})
	if len(imgs.Images) != 2 || !imgs.Images[1].Pinned || imgs.Images[1].RepoTags[0] != "registry.k8s.io/pause:3.10" {
		t.Fatalf("images %v", imgs.Images)
	}
}

func TestStopGraceAndKill(t *testing.T) {
	f := newFixture(t, &script.Script{Containers: []script.ContainerRule{
		{Match: script.ContainerMatch{Name: "slow"}, Stop: &script.StopSpec{Delay: script.Duration(20 * time.Second), ExitCode: 143}},
		{Match: script.ContainerMatch{Name: "stubborn"}, Stop: &script.StopSpec{Delay: script.Duration(time.Hour)}},
	}})
	_, slow := f.Run("p1", "slow", "nginx:1.27", 0)
	_, stubborn := f.Run("p2", "stubborn", "nginx:1.27", 0)
	_, plain := f.Run("p3", "plain", "nginx:1.27", 0)

	done := make(chan error, 2)
	go func() {
		_, err := f.RT.StopContainer(f.Ctx, &runtimeapi.StopContainerRequest{ContainerId: slow, Timeout: 30})
		done <- err
	}()
	go func() {
		_, err := f.RT.StopContainer(f.Ctx, &runtimeapi.StopContainerRequest{ContainerId: stubborn, Timeout: 30})
		done <- err
	}()
	for f.RT.InFlight() != 2 || !f.RT.Idle() {
		time.Sleep(time.Millisecond)
	}
	if next, ok := f.RT.NextWakeup(); !ok || !next.Equal(fixture.Epoch.Add(20*time.Second)) {
		t.Fatalf("next wakeup %v %v", next, ok)
	}
	f.Advance(20 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := f.Status(slow); st.ExitCode != 143 || st.Reason != "Error" || st.FinishedAt != fixture.Epoch.Add(20*time.Second).UnixNano() {
		t.Fatalf("slow %v", st)
	}
	if st := f.Status(stubborn); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("stubborn stopped early: %v", st)
	}
	f.Advance(10 * time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := f.Status(stubborn); st.ExitCode != 137 || st.FinishedAt != fixture.Epoch.Add(30*time.Second).UnixNano() {
		t.Fatalf("stubborn %v", st)
	}
	// a stop in progress ends when the sandbox is stopped under it
	p4, stubborn2 := f.Run("p4", "stubborn", "nginx:1.27", 0)
	go func() {
		_, err := f.RT.StopContainer(f.Ctx, &runtimeapi.StopContainerRequest{ContainerId: stubborn2, Timeout: 300})
		done <- err
	}()
	waitFor(t, func() bool { return f.RT.InFlight() == 1 && f.RT.Idle() })
	if _, err := f.RT.StopPodSandbox(f.Ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p4}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := f.Status(stubborn2); st.ExitCode != 137 || st.FinishedAt != fixture.Epoch.Add(30*time.Second).UnixNano() {
		t.Fatalf("stubborn2 %v", st)
	}
	// timeout 0 kills at once
	if _, err := f.RT.StopContainer(f.Ctx, &runtimeapi.StopContainerRequest{ContainerId: plain}); err != nil {
		t.Fatal(err)
	}
	if st := f.Status(plain); st.ExitCode != 137 || st.Reason != "Error" {
		t.Fatalf("plain %v", st)
	}
}

// By default removing a running container or a ready sandbox stops it first, as the CRI text
// asks; forceRemove false, or a fault, asks for the refusal older runtimes give.
func TestForceRemove(t *testing.T) {
	no := false
	for _, tc := range []struct {
		name   string
		script *script.Script
		refuse bool
	}{
		{"default", nil, false},
		{"forceRemove false", &script.Script{Node: script.NodeScript{ForceRemove: &no}}, true},
		{"fault", &script.Script{Faults: []script.FaultRule{{Method: "Remove*", Error: &script.FaultError{Code: "FailedPrecondition", Message: "running"}}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.script)
			pod, c := f.Run("p", "c", "redis", 0)
			_, errC := f.RT.RemoveContainer(f.Ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c})
			_, errS := f.RT.RemovePodSandbox(f.Ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: pod})
			if tc.refuse {
				wantCode(t, errC, codes.FailedPrecondition)
				wantCode(t, errS, codes.FailedPrecondition)
				if st := f.Status(c); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
					t.Fatalf("a refused removal changed the container: %v", st)
				}
				return
			}
			if errC != nil || errS != nil {
				t.Fatal(errC, errS)
			}
			_, err := f.RT.ContainerStatus(f.Ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c})
			wantCode(t, err, codes.NotFound)
			_, err = f.RT.PodSandboxStatus(f.Ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: pod})
			wantCode(t, err, codes.NotFound)
		})
	}
}

func TestCreateNeedsImageAndUniqueNames(t *testing.T) {
	f := newFixture(t, nil)
	pod := f.RunPod("p", nil)
	_, err := f.RT.CreateContainer(f.Ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: fixture.ContainerConfig("c", "never-pulled", 0)})
	wantCode(t, err, codes.NotFound)
	f.Pull("alpine:3.20")
	// by tag, short name or id all resolve
	a := f.Create(pod, "a", "alpine:3.20", 0)
	f.Create(pod, "b", "docker.io/library/alpine:3.20", 0)
	_, err = f.RT.CreateContainer(f.Ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: fixture.ContainerConfig("a", "alpine:3.20", 0)})
	wantCode(t, err, codes.AlreadyExists)
	_, err = f.RT.RunPodSandbox(f.Ctx, &runtimeapi.RunPodSandboxRequest{Config: fixture.PodConfig("p", nil)})
	wantCode(t, err, codes.AlreadyExists)
	_, err = f.RT.RunPodSandbox(f.Ctx, &runtimeapi.RunPodSandboxRequest{Config: fixture.PodConfig("q", nil), RuntimeHandler: "kata"})
	wantCode(t, err, codes.InvalidArgument)
	if _, err := f.RT.RunPodSandbox(f.Ctx, &runtimeapi.RunPodSandboxRequest{Config: fixture.PodConfig("q", nil), RuntimeHandler: "runc"}); err != nil {
		t.Fatal(err)
	}
	// prefixes of ids work as in containerd
	if st := f.Status(a[:12]); st.Id != a {
		t.Fatalf("prefix lookup gave %s", st.Id)
	}
	// a new attempt is a new name
	cfg := fixture.ContainerConfig("a", "alpine:3.20", 0)
	cfg.Metadata.Attempt = 1
	if _, err := f.RT.CreateContainer(f.Ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: cfg}); err != nil {
		t.Fatal(err)
	}
}

func TestIDsUniqueAndDeterministic(t *testing.T) {
	ids := func() []string {
		f := newFixture(t, nil)
		f.Pull("busybox")
		var out []string
		for i := 0; i < 50; i++ {
			p := f.RunPod("p"+string(rune('a'+i%26))+strings.Repeat("x", i/26), nil)
			out = append(out, p, f.Create(p, "c", "busybox", 0))
		}
		return out
	}
	a, b := ids(), ids()
	seen := map[string]bool{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("ids differ between identical runs: %s %s", a[i], b[i])
		}
		if seen[a[i]] || len(a[i]) != 64 {
			t.Fatalf("bad or duplicate id %s", a[i])
		}
		seen[a[i]] = true
	}
}

func TestListFilters(t *testing.T) {
	f := newFixture(t, nil)
	f.Pull("busybox")
	p1 := f.RunPod("one", map[string]string{"tier": "front"})
	p2 := f.RunPod("two", map[string]string{"tier": "back"})
	c1 := f.Create(p1, "a", "busybox", 0)
	c2 := f.Create(p1, "b", "busybox", 0)
	c3 := f.Create(p2, "a", "busybox", 0)
	f.Start(c1)
	f.Start(c3)
	if _, err := f.RT.StopPodSandbox(f.Ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p2}); err != nil {
		t.Fatal(err)
	}
	list := func(fl *runtimeapi.ContainerFilter) []string {
		r, err := f.RT.ListContainers(f.Ctx, &runtimeapi.ListContainersRequest{Filter: fl})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range r.Containers {
			ids = append(ids, c.Id)
		}
		return ids
	}
	eq := func(got []string, want ...string) {
		t.Helper()
		if !reflect.DeepEqual(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("got %v want %v", got, want)
		}
	}
	eq(list(nil), c1, c2, c3)
	eq(list(&runtimeapi.ContainerFilter{PodSandboxId: p1}), c1, c2)
	eq(list(&runtimeapi.ContainerFilter{PodSandboxId: p2[:10]}), c3)
	eq(list(&runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}), c1)
	eq(list(&runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_EXITED}}), c3)
	eq(list(&runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_CREATED}}), c2)
	eq(list(&runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.container.name": "a"}}), c1, c3)
	eq(list(&runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.container.name": "a", "tier": "back"}}))
	eq(list(&runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.container.name": "c"}}))
	eq(list(&runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.container.name": "a"}, PodSandboxId: p2}), c3)
	eq(list(&runtimeapi.ContainerFilter{Id: c2[:8]}), c2)
	eq(list(&runtimeapi.ContainerFilter{PodSandboxId: "nonexistent"}))

	sbs := func(fl *runtimeapi.PodSandboxFilter) []string {
		r, err := f.RT.ListPodSandbox(f.Ctx, &runtimeapi.ListPodSandboxRequest{Filter: fl})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range r.Items {
			ids = append(ids, s.Id)
		}
		return ids
	}
	eq(sbs(nil), p1, p2)
	eq(sbs(&runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"tier": "back"}}), p2)
	eq(sbs(&runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}), p1)
	eq(sbs(&runtimeapi.PodSandboxFilter{Id: p2}), p2)
	eq(sbs(&runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"tier": "back", "io.kubernetes.pod.name": "two"}}), p2)
	eq(sbs(&runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"tier": "middle"}}))

	st, err := f.RT.ListContainerStats(f.Ctx, &runtimeapi.ListContainerStatsRequest{Filter: &runtimeapi.ContainerStatsFilter{PodSandboxId: p1}})
	if err != nil || len(st.Stats) != 2 {
		t.Fatalf("stats %v %v", st, err)
	}
	ps, err := f.RT.ListPodSandboxStats(f.Ctx, &runtimeapi.ListPodSandboxStatsRequest{})
	if err != nil || len(ps.Stats) != 1 || ps.Stats[0].Attributes.Id != p1 {
		t.Fatalf("pod stats %v %v", ps, err)
	}

	// Removed objects leave the label lookups; later ones come after the earlier ones.
	if _, err := f.RT.StopContainer(f.Ctx, &runtimeapi.StopContainerRequest{ContainerId: c1}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.RT.RemoveContainer(f.Ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c1}); err != nil {
		t.Fatal(err)
	}
	c4 := f.Create(p1, "a", "busybox", 0)
	eq(list(&runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.container.name": "a"}}), c3, c4)
	if _, err := f.RT.RemovePodSandbox(f.Ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p2}); err != nil {
		t.Fatal(err)
	}
	eq(sbs(&runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"tier": "back"}}))
	eq(list(&runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.container.name": "a"}}), c4)
}

// The README's example script is one a runtime starts with.
func TestExampleScriptRuns(t *testing.T) {
	s, err := script.Load("examples/scenario.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Script: s}); err != nil {
		t.Fatal(err)
	}
}
