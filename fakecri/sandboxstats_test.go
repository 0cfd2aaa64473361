package fakecri

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/fakecritest/fixture"
	"orch.io/orch/fakecri/script"
)

// SandboxStats answers what ListPodSandboxStats does, without a line in the call log.
func TestSandboxStatsWithoutACall(t *testing.T) {
	f := newFixture(t, nil)
	f.RunPod("web", nil)
	f.Run("api", "app", "busybox", 0)
	f.Advance(time.Minute)
	f.RT.ResetCalls()
	got := f.RT.SandboxStats(nil)
	if n := len(f.RT.Calls(calllog.Filter{})); n != 0 {
		t.Fatalf("SandboxStats made %d calls", n)
	}
	want, err := f.RT.ListPodSandboxStats(f.Ctx, &runtimeapi.ListPodSandboxStatsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || len(got) != len(want.Stats) {
		t.Fatalf("SandboxStats has %d sandboxes, ListPodSandboxStats %d", len(got), len(want.Stats))
	}
	for i := range got {
		if !proto.Equal(got[i], want.Stats[i]) {
			t.Fatalf("sandbox %d: SandboxStats %v\nListPodSandboxStats %v", i, got[i], want.Stats[i])
		}
	}
}

// A container's volume writes land in the host directory of the mount at that container path,
// count on the root filesystem, and stay at their exit value once the container exits.
func TestVolumeUsage(t *testing.T) {
	s, err := script.Parse([]byte(`
containers:
  - match: {name: writer}
    usage: {volumes: {"/cache": {ramp: {from: 0, perSecond: 1Mi}}}}
    exit: {after: 30s, code: 0}
`))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, s)
	rt, ctx := f.RT, f.Ctx
	f.Pull("busybox")
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: "u"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctr, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: &runtimeapi.PodSandboxConfig{},
		Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "writer"}, Image: &runtimeapi.ImageSpec{Image: "busybox"},
			Mounts: []*runtimeapi.Mount{{ContainerPath: "/cache", HostPath: "/var/lib/orchlet/pods/u/volumes/cache"}, {ContainerPath: "/other", HostPath: "/other"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: ctr.ContainerId}); err != nil {
		t.Fatal(err)
	}
	root := func() uint64 {
		for _, f := range rt.Filesystems() {
			if f.Name == "rootfs" {
				return f.UsedBytes
			}
		}
		t.Fatal("no rootfs")
		return 0
	}
	base := root()
	f.Advance(10 * time.Second)
	if got := rt.VolumeUsage("/var/lib/orchlet/pods/u/volumes/cache"); got != 10<<20 {
		t.Fatalf("after 10s the volume holds %d, want 10Mi", got)
	}
	if got := rt.VolumeUsage("/other"); got != 0 {
		t.Fatalf("another mount holds %d", got)
	}
	if got := root() - base; got != 10<<20 {
		t.Fatalf("root filesystem grew %d, want 10Mi", got)
	}
	f.Advance(time.Minute)
	if got := rt.VolumeUsage("/var/lib/orchlet/pods/u/volumes/cache"); got != 30<<20 {
		t.Fatalf("after the exit at 30s the volume holds %d, want 30Mi", got)
	}
	if _, err := script.Parse([]byte(`{containers: [{match: {name: x}, usage: {volumes: {"cache": 1Mi}}}]}`)); err == nil || !strings.Contains(err.Error(), "not an absolute container path") {
		t.Fatalf("a relative volume path: %v", err)
	}
}

// A list of sandbox stats, its blocks allocated together, answers for each sandbox what
// PodSandboxStats does alone; a container's stats name its annotations as updated, and a sandbox on
// the host's network has no network stats.
func TestSandboxStatsListedAsAlone(t *testing.T) {
	f := newFixture(t, nil)
	_, ctr := f.Run("web", "app", "busybox", 64<<20)
	pod := f.RunPod("two", nil)
	f.Start(f.Create(pod, "a", "busybox", 0))
	f.Start(f.Create(pod, "b", "busybox", 0))
	host := runHostNetworkSandbox(t, f)
	f.Advance(time.Minute)
	f.RT.SandboxStats(nil) // the attributes are made, to be made again after the update
	if _, err := f.RT.UpdateContainerResources(f.Ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: ctr, Annotations: map[string]string{"x": "y"}}); err != nil {
		t.Fatal(err)
	}
	f.Advance(time.Minute)
	list := f.RT.SandboxStats(nil)
	if len(list) != 3 {
		t.Fatalf("%d sandboxes listed, want 3", len(list))
	}
	for _, st := range list {
		alone, err := f.RT.PodSandboxStats(f.Ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: st.Attributes.Id})
		if err != nil {
			t.Fatal(err)
		}
		if !proto.Equal(st, alone.Stats) {
			t.Fatalf("listed %v\nalone %v", st, alone.Stats)
		}
		if (st.Attributes.Id == host) != (st.Linux.Network == nil) {
			t.Fatalf("sandbox %s: network stats %v", st.Attributes.Metadata.Name, st.Linux.Network)
		}
		for _, cs := range st.Linux.Containers {
			if cs.Attributes.Id == ctr && cs.Attributes.Annotations["x"] != "y" {
				t.Fatalf("container stats name annotations %v, want x=y among them", cs.Attributes.Annotations)
			}
		}
	}
	if n := len(list[1].Linux.Containers); n != 2 || cap(list[0].Linux.Containers) != 1 {
		t.Fatalf("the lists of containers are cut wrong: %d, cap %d", n, cap(list[0].Linux.Containers))
	}
}

// An answer written over an arena's last is the answer a new one would be, through sandboxes and
// containers coming and going, a sandbox on the host's network, and an arena grown: nothing of
// the last answer is left in it.
func TestSandboxStatsInAnArena(t *testing.T) {
	f := newFixture(t, nil)
	arena := &StatsArena{}
	same := func(when string) {
		t.Helper()
		got := f.RT.SandboxStats(arena)
		want := f.RT.SandboxStats(nil)
		if len(got) != len(want) {
			t.Fatalf("%s: %d sandboxes in the arena's answer, %d in a new one", when, len(got), len(want))
		}
		for i := range got {
			if !proto.Equal(got[i], want[i]) {
				t.Fatalf("%s: sandbox %d: in the arena %v\nnew %v", when, i, got[i], want[i])
			}
		}
	}
	web, ctr := f.Run("web", "app", "busybox", 64<<20)
	f.Start(f.Create(web, "sidecar", "busybox", 0))
	runHostNetworkSandbox(t, f)
	f.Advance(time.Minute)
	same("two sandboxes")
	two := f.RunPod("two", nil)
	f.Start(f.Create(two, "a", "busybox", 0))
	f.Advance(time.Minute)
	same("three sandboxes, the arena grown")
	if _, err := f.RT.StopPodSandbox(f.Ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: web}); err != nil {
		t.Fatal(err)
	}
	f.Advance(time.Minute)
	same("web stopped: the host-network sandbox in its place, with no containers")
	web2, _ := f.Run("web2", "app", "busybox", 64<<20)
	f.Advance(time.Minute)
	same("another sandbox")
	if _, err := f.RT.StopContainer(f.Ctx, &runtimeapi.StopContainerRequest{ContainerId: ctr}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.RT.RemoveContainer(f.Ctx, &runtimeapi.RemoveContainerRequest{ContainerId: ctr}); err != nil {
		t.Fatal(err)
	}
	f.Start(f.Create(web2, "again", "busybox", 0))
	f.Advance(time.Minute)
	same("a container removed, another made")
}

// runHostNetworkSandbox runs a sandbox "host" on the node's network and returns its id.
func runHostNetworkSandbox(t *testing.T, f *fixture.Fixture[*Runtime]) string {
	t.Helper()
	r, err := f.RT.RunPodSandbox(f.Ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "host", Namespace: "default", Uid: "h"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return r.PodSandboxId
}
