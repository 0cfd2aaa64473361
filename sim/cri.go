package sim

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"

	"orch.io/orch/fakecri"
)

// inProcess is the agent's CRI client for a fakecri in the same process: each method makes the
// request a CRI client would send and calls the runtime's server method directly.
//
// Over a socket, every round trip would go through the network poller and cost a simulated node
// far more than the work it asks for. Answers are cloned, as decoding them off the wire would,
// because fakecri shares read-only data with what it returns.
type inProcess struct{ rt *fakecri.Runtime }

var (
	_ cri.RuntimeService      = inProcess{}
	_ cri.ImageManagerService = inProcess{}
)

func clone[T proto.Message](m T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, err
	}
	return proto.Clone(m).(T), nil
}

func cloneAll[T proto.Message](ms []T) []T {
	out := make([]T, len(ms))
	for i, m := range ms {
		out[i] = proto.Clone(m).(T)
	}
	return out
}

func (c inProcess) Version(ctx context.Context, v string) (*runtimeapi.VersionResponse, error) {
	return clone(c.rt.Version(ctx, &runtimeapi.VersionRequest{Version: v}))
}

func (c inProcess) CreateContainer(ctx context.Context, sandbox string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	r, err := c.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sandbox, Config: cfg, SandboxConfig: sbCfg})
	return r.GetContainerId(), err
}

func (c inProcess) StartContainer(ctx context.Context, id string) error {
	_, err := c.rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: id})
	return err
}

func (c inProcess) StopContainer(ctx context.Context, id string, timeout int64) error {
	_, err := c.rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: timeout})
	return err
}

func (c inProcess) RemoveContainer(ctx context.Context, id string) error {
	_, err := c.rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id})
	return err
}

func (c inProcess) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r, err := c.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: f})
	return r.GetContainers(), err
}

func (c inProcess) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	return clone(c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: verbose}))
}

func (c inProcess) UpdateContainerResources(ctx context.Context, id string, res *runtimeapi.ContainerResources) error {
	_, err := c.rt.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: res.GetLinux(), Windows: res.GetWindows()})
	return err
}

func (c inProcess) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	r, err := c.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: int64(timeout.Seconds())})
	if err == nil && r.GetExitCode() != 0 {
		// As Kubernetes' CRI client reports a non-zero exit.
		return r.GetStdout(), r.GetStderr(), utilexec.CodeExitError{
			Err:  fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), r.GetExitCode(), r.GetStderr()),
			Code: int(r.GetExitCode()),
		}
	}
	return r.GetStdout(), r.GetStderr(), err
}

func (c inProcess) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return c.rt.Exec(ctx, req)
}

func (c inProcess) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return c.rt.Attach(ctx, req)
}

func (c inProcess) ReopenContainerLog(ctx context.Context, id string) error {
	_, err := c.rt.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: id})
	return err
}

func (c inProcess) CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) error {
	_, err := c.rt.CheckpointContainer(ctx, req)
	return err
}

// GetContainerEvents forwards the runtime's in-process event subscription until ctx ends.
func (c inProcess) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	events := c.rt.Subscribe(ctx)
	if established != nil {
		established(nil)
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-events:
			if !ok {
				return nil
			}
			ch <- proto.Clone(e).(*runtimeapi.ContainerEventResponse)
		}
	}
}

func (c inProcess) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	r, err := c.rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: handler})
	return r.GetPodSandboxId(), err
}

func (c inProcess) StopPodSandbox(ctx context.Context, id string) error {
	_, err := c.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
	return err
}

func (c inProcess) RemovePodSandbox(ctx context.Context, id string) error {
	_, err := c.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
	return err
}

func (c inProcess) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	return clone(c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: verbose}))
}

func (c inProcess) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r, err := c.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: f})
	return r.GetItems(), err
}

func (c inProcess) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return c.rt.PortForward(ctx, req)
}

func (c inProcess) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return c.rt.UpdatePodSandboxResources(ctx, req)
}

func (c inProcess) CheckpointPod(ctx context.Context, req *runtimeapi.CheckpointPodRequest) error {
	_, err := c.rt.CheckpointPod(ctx, req)
	return err
}

func (c inProcess) RestorePod(ctx context.Context, req *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	return c.rt.RestorePod(ctx, req)
}

func (c inProcess) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	r, err := c.rt.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
	if err != nil {
		return nil, err
	}
	return proto.Clone(r.GetStats()).(*runtimeapi.ContainerStats), nil
}

func (c inProcess) ListContainerStats(ctx context.Context, f *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	r, err := c.rt.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: f})
	return cloneAll(r.GetStats()), err
}

func (c inProcess) PodSandboxStats(ctx context.Context, id string) (*runtimeapi.PodSandboxStats, error) {
	r, err := c.rt.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: id})
	if err != nil {
		return nil, err
	}
	return proto.Clone(r.GetStats()).(*runtimeapi.PodSandboxStats), nil
}

func (c inProcess) ListPodSandboxStats(ctx context.Context, f *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	r, err := c.rt.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: f})
	return cloneAll(r.GetStats()), err
}

func (c inProcess) ListMetricDescriptors(ctx context.Context) ([]*runtimeapi.MetricDescriptor, error) {
	r, err := c.rt.ListMetricDescriptors(ctx, &runtimeapi.ListMetricDescriptorsRequest{})
	return cloneAll(r.GetDescriptors()), err
}

func (c inProcess) ListPodSandboxMetrics(ctx context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
	r, err := c.rt.ListPodSandboxMetrics(ctx, &runtimeapi.ListPodSandboxMetricsRequest{})
	return cloneAll(r.GetPodMetrics()), err
}

func (c inProcess) UpdateRuntimeConfig(ctx context.Context, cfg *runtimeapi.RuntimeConfig) error {
	_, err := c.rt.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: cfg})
	return err
}

func (c inProcess) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	return clone(c.rt.Status(ctx, &runtimeapi.StatusRequest{Verbose: verbose}))
}

func (c inProcess) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return clone(c.rt.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{}))
}

func (c inProcess) ListImages(ctx context.Context, f *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	r, err := c.rt.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: f})
	return cloneAll(r.GetImages()), err
}

func (c inProcess) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	return clone(c.rt.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: image, Verbose: verbose}))
}

func (c inProcess) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	r, err := c.rt.PullImage(ctx, &runtimeapi.PullImageRequest{Image: image, Auth: auth, SandboxConfig: sbCfg})
	return r.GetImageRef(), err
}

func (c inProcess) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	_, err := c.rt.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: image})
	return err
}

func (c inProcess) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return clone(c.rt.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{}))
}

// Close has nothing to release: the world closes the runtime.
func (c inProcess) Close(context.Context) error { return nil }
