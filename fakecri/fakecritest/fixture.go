package fakecritest

import (
	"context"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/script"
)

// Epoch is where a Fixture's mock clock starts.
var Epoch = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// A Fixture is a fakecri runtime in process on a mock clock, driven by the calls an agent makes,
// for the tests of the packages beside fakecri (its control API, its recorder). Each call fails
// the test on an error.
type Fixture struct {
	T    testing.TB
	Ctx  context.Context
	Mock *clock.Mock
	RT   *fakecri.Runtime
}

// NewFixture starts a runtime running s (nil: a healthy runtime) at Epoch with seed 7.
func NewFixture(t testing.TB, s *script.Script) *Fixture {
	t.Helper()
	mock := clock.NewMock()
	mock.Set(Epoch)
	rt, err := fakecri.New(fakecri.Options{Clock: mock, Seed: 7, Script: s})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return &Fixture{T: t, Ctx: ctx, Mock: mock, RT: rt}
}

// Advance moves the clock by d and waits for the runtime to settle.
func (f *Fixture) Advance(d time.Duration) {
	f.T.Helper()
	if err := f.RT.Advance(f.Ctx, f.Mock, d); err != nil {
		f.T.Fatal(err)
	}
}

// PodConfig is the sandbox configuration the node agent sends for a pod of the default namespace.
func PodConfig(name string, labels map[string]string) *runtimeapi.PodSandboxConfig {
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

// ContainerConfig is the configuration of a container running `sleep 3600` with half a core and,
// when memLimit is not 0, that memory limit.
func ContainerConfig(name, image string, memLimit int64) *runtimeapi.ContainerConfig {
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

// Pull pulls image and returns its reference.
func (f *Fixture) Pull(image string) string {
	f.T.Helper()
	resp, err := f.RT.PullImage(f.Ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	if err != nil {
		f.T.Fatalf("pull %s: %v", image, err)
	}
	return resp.ImageRef
}

// RunPod runs a sandbox of PodConfig(name, labels) and returns its ID.
func (f *Fixture) RunPod(name string, labels map[string]string) string {
	f.T.Helper()
	resp, err := f.RT.RunPodSandbox(f.Ctx, &runtimeapi.RunPodSandboxRequest{Config: PodConfig(name, labels)})
	if err != nil {
		f.T.Fatalf("run pod %s: %v", name, err)
	}
	return resp.PodSandboxId
}

// Create creates a container of ContainerConfig in pod and returns its ID.
func (f *Fixture) Create(pod, name, image string, memLimit int64) string {
	f.T.Helper()
	resp, err := f.RT.CreateContainer(f.Ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: pod, Config: ContainerConfig(name, image, memLimit),
	})
	if err != nil {
		f.T.Fatalf("create %s: %v", name, err)
	}
	return resp.ContainerId
}

// Start starts the container id.
func (f *Fixture) Start(id string) {
	f.T.Helper()
	if _, err := f.RT.StartContainer(f.Ctx, &runtimeapi.StartContainerRequest{ContainerId: id}); err != nil {
		f.T.Fatalf("start %s: %v", id, err)
	}
}

// Run pulls, creates and starts a container in a new pod, and returns the pod's and the
// container's IDs.
func (f *Fixture) Run(pod, name, image string, memLimit int64) (string, string) {
	f.T.Helper()
	f.Pull(image)
	p := f.RunPod(pod, nil)
	c := f.Create(p, name, image, memLimit)
	f.Start(c)
	return p, c
}

// Status is the container's status.
func (f *Fixture) Status(id string) *runtimeapi.ContainerStatus {
	f.T.Helper()
	resp, err := f.RT.ContainerStatus(f.Ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		f.T.Fatalf("status %s: %v", id, err)
	}
	return resp.Status
}
