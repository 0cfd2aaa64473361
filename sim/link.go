package sim

import (
	"context"
	"sync/atomic"
	"time"

	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// link is an agent's connection to its runtime, which killing the agent cuts (Node.Kill). As a
// killed process's socket closes, the runtime ends every call it was serving: their contexts are
// the agent's life, which the kill cancels. And as a killed process's threads never run again,
// nothing reaches the agent through a cut link: a goroutine coming back from the runtime, or
// going to it, stays parked here for good, so the dead agent writes nothing more, to its root
// directory or anywhere, and a restarted agent (a new link) is alone on the runtime.
type link struct {
	inProcess
	cut atomic.Bool
}

var (
	_ cri.RuntimeService      = (*link)(nil)
	_ cri.ImageManagerService = (*link)(nil)
)

// open parks the caller for good once the link is cut.
func (l *link) open() {
	if l.cut.Load() {
		select {}
	}
}

// through makes one call over the link.
func through[T any](l *link, call func() (T, error)) (T, error) {
	l.open()
	v, err := call()
	l.open()
	return v, err
}

func (l *link) do(call func() error) error {
	_, err := through(l, func() (struct{}, error) { return struct{}{}, call() })
	return err
}

func (l *link) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (stdout, stderr []byte, err error) {
	err = l.do(func() error {
		stdout, stderr, err = l.inProcess.ExecSync(ctx, id, cmd, timeout)
		return err
	})
	return stdout, stderr, err
}

func (l *link) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	return l.do(func() error { return l.inProcess.GetContainerEvents(ctx, ch, established) })
}

func (l *link) Version(ctx context.Context, v string) (*runtimeapi.VersionResponse, error) {
	return through(l, func() (*runtimeapi.VersionResponse, error) { return l.inProcess.Version(ctx, v) })
}

func (l *link) CreateContainer(ctx context.Context, sandbox string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	return through(l, func() (string, error) { return l.inProcess.CreateContainer(ctx, sandbox, cfg, sbCfg) })
}

func (l *link) StartContainer(ctx context.Context, id string) error {
	return l.do(func() error { return l.inProcess.StartContainer(ctx, id) })
}

func (l *link) StopContainer(ctx context.Context, id string, timeout int64) error {
	return l.do(func() error { return l.inProcess.StopContainer(ctx, id, timeout) })
}

func (l *link) RemoveContainer(ctx context.Context, id string) error {
	return l.do(func() error { return l.inProcess.RemoveContainer(ctx, id) })
}

func (l *link) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return through(l, func() ([]*runtimeapi.Container, error) { return l.inProcess.ListContainers(ctx, f) })
}

func (l *link) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	return through(l, func() (*runtimeapi.ContainerStatusResponse, error) {
		return l.inProcess.ContainerStatus(ctx, id, verbose)
	})
}

func (l *link) UpdateContainerResources(ctx context.Context, id string, res *runtimeapi.ContainerResources) error {
	return l.do(func() error { return l.inProcess.UpdateContainerResources(ctx, id, res) })
}

func (l *link) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return through(l, func() (*runtimeapi.ExecResponse, error) { return l.inProcess.Exec(ctx, req) })
}

func (l *link) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return through(l, func() (*runtimeapi.AttachResponse, error) { return l.inProcess.Attach(ctx, req) })
}

func (l *link) ReopenContainerLog(ctx context.Context, id string) error {
	return l.do(func() error { return l.inProcess.ReopenContainerLog(ctx, id) })
}

func (l *link) CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) error {
	return l.do(func() error { return l.inProcess.CheckpointContainer(ctx, req) })
}

func (l *link) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	return through(l, func() (string, error) { return l.inProcess.RunPodSandbox(ctx, cfg, handler) })
}

func (l *link) StopPodSandbox(ctx context.Context, id string) error {
	return l.do(func() error { return l.inProcess.StopPodSandbox(ctx, id) })
}

func (l *link) RemovePodSandbox(ctx context.Context, id string) error {
	return l.do(func() error { return l.inProcess.RemovePodSandbox(ctx, id) })
}

func (l *link) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	return through(l, func() (*runtimeapi.PodSandboxStatusResponse, error) {
		return l.inProcess.PodSandboxStatus(ctx, id, verbose)
	})
}

func (l *link) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return through(l, func() ([]*runtimeapi.PodSandbox, error) { return l.inProcess.ListPodSandbox(ctx, f) })
}

func (l *link) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return through(l, func() (*runtimeapi.PortForwardResponse, error) { return l.inProcess.PortForward(ctx, req) })
}

func (l *link) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return through(l, func() (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
		return l.inProcess.UpdatePodSandboxResources(ctx, req)
	})
}

func (l *link) CheckpointPod(ctx context.Context, req *runtimeapi.CheckpointPodRequest) error {
	return l.do(func() error { return l.inProcess.CheckpointPod(ctx, req) })
}

func (l *link) RestorePod(ctx context.Context, req *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	return through(l, func() (*runtimeapi.RestorePodResponse, error) { return l.inProcess.RestorePod(ctx, req) })
}

func (l *link) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	return through(l, func() (*runtimeapi.ContainerStats, error) { return l.inProcess.ContainerStats(ctx, id) })
}

func (l *link) ListContainerStats(ctx context.Context, f *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return through(l, func() ([]*runtimeapi.ContainerStats, error) { return l.inProcess.ListContainerStats(ctx, f) })
}

func (l *link) PodSandboxStats(ctx context.Context, id string) (*runtimeapi.PodSandboxStats, error) {
	return through(l, func() (*runtimeapi.PodSandboxStats, error) { return l.inProcess.PodSandboxStats(ctx, id) })
}

func (l *link) ListPodSandboxStats(ctx context.Context, f *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	return through(l, func() ([]*runtimeapi.PodSandboxStats, error) { return l.inProcess.ListPodSandboxStats(ctx, f) })
}

func (l *link) ListMetricDescriptors(ctx context.Context) ([]*runtimeapi.MetricDescriptor, error) {
	return through(l, func() ([]*runtimeapi.MetricDescriptor, error) { return l.inProcess.ListMetricDescriptors(ctx) })
}

func (l *link) ListPodSandboxMetrics(ctx context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
	return through(l, func() ([]*runtimeapi.PodSandboxMetrics, error) { return l.inProcess.ListPodSandboxMetrics(ctx) })
}

func (l *link) UpdateRuntimeConfig(ctx context.Context, cfg *runtimeapi.RuntimeConfig) error {
	return l.do(func() error { return l.inProcess.UpdateRuntimeConfig(ctx, cfg) })
}

func (l *link) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	return through(l, func() (*runtimeapi.StatusResponse, error) { return l.inProcess.Status(ctx, verbose) })
}

func (l *link) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return through(l, func() (*runtimeapi.RuntimeConfigResponse, error) { return l.inProcess.RuntimeConfig(ctx) })
}

func (l *link) ListImages(ctx context.Context, f *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return through(l, func() ([]*runtimeapi.Image, error) { return l.inProcess.ListImages(ctx, f) })
}

func (l *link) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	return through(l, func() (*runtimeapi.ImageStatusResponse, error) { return l.inProcess.ImageStatus(ctx, image, verbose) })
}

func (l *link) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	return through(l, func() (string, error) { return l.inProcess.PullImage(ctx, image, auth, sbCfg) })
}

func (l *link) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	return l.do(func() error { return l.inProcess.RemoveImage(ctx, image) })
}

func (l *link) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return through(l, func() (*runtimeapi.ImageFsInfoResponse, error) { return l.inProcess.ImageFsInfo(ctx) })
}
