package fakecri

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/script"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

const gi = 1 << 30

type fixture struct {
	t    testing.TB
	ctx  context.Context
	mock *clock.Mock
	rt   *Runtime
}

func newFixture(t testing.TB, s *script.Script) *fixture {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(t0)
	rt, err := New(Options{Clock: mock, Seed: 7, Script: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &fixture{t: t, ctx: ctx, mock: mock, rt: rt}
}

func (f *fixture) advance(d time.Duration) {
	f.t.Helper()
	if err := f.rt.Advance(f.ctx, f.mock, d); err != nil {
		f.t.Fatal(err)
	}
}

func podConfig(name string, labels map[string]string) *runtimeapi.PodSandboxConfig {
	if labels == nil {
		labels = map[string]string{}
	}
	labels["io.kubernetes.pod.name"] = name
	labels["io.kubernetes.pod.namespace"] = "default"
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		Hostname:     name,
		LogDirectory: "/var/log/pods/default_" + name + "_uid-" + name,
		Labels:       labels,
		Annotations:  map[string]string{"kubernetes.io/config.source": "file"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
			},
		},
	}
}

func containerConfig(name, image string, memLimit int64) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: image},
		Command:  []string{"sleep", "3600"},
		Labels:   map[string]string{"io.kubernetes.container.name": name},
		LogPath:  name + "/0.log",
		Linux: &runtimeapi.LinuxContainerConfig{Resources: &runtimeapi.LinuxContainerResources{
			CpuPeriod: 100000, CpuQuota: 50000, CpuShares: 512, MemoryLimitInBytes: memLimit,
		}},
	}
}

func (f *fixture) pull(image string) string {
	f.t.Helper()
	resp, err := f.rt.PullImage(f.ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		f.t.Fatalf("pull %s: %v", image, err)
	}
	return resp.ImageRef
}

func (f *fixture) runPod(name string, labels map[string]string) string {
	f.t.Helper()
	resp, err := f.rt.RunPodSandbox(f.ctx, &runtimeapi.RunPodSandboxRequest{Config: podConfig(name, labels)})
	if err != nil {
		f.t.Fatalf("run pod %s: %v", name, err)
	}
	return resp.PodSandboxId
}

func (f *fixture) create(pod, name, image string, memLimit int64) string {
	f.t.Helper()
	resp, err := f.rt.CreateContainer(f.ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: pod, Config: containerConfig(name, image, memLimit),
	})
	if err != nil {
		f.t.Fatalf("create %s: %v", name, err)
	}
	return resp.ContainerId
}

func (f *fixture) start(id string) {
	f.t.Helper()
	if _, err := f.rt.StartContainer(f.ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		f.t.Fatalf("start %s: %v", id, err)
	}
}

// run pulls, creates and starts a container in a new pod.
func (f *fixture) run(pod, name, image string, memLimit int64) (string, string) {
	f.t.Helper()
	f.pull(image)
	p := f.runPod(pod, nil)
	c := f.create(p, name, image, memLimit)
	f.start(c)
	return p, c
}

func (f *fixture) status(id string) *runtimeapi.ContainerStatus {
	f.t.Helper()
	resp, err := f.rt.ContainerStatus(f.ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		f.t.Fatalf("status %s: %v", id, err)
	}
	return resp.Status
}

func wantCode(t testing.TB, err error, code codes.Code) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("want %v, got %v", code, err)
	}
}

func u32(v uint32) *uint32 { return &v }
