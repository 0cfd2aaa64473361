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
// far more than the work it asks for. A socket also keeps the two sides from sharing a message;
// here an answer that points into fakecri's state (a container's or sandbox's status, stats, an
// event) is cloned, as decoding it off the wire would, and one fakecri builds for the call alone
// and never touches again (Version, Status, RuntimeConfig, ImageStatus, ListImages, ImageFsInfo)
// is the agent's as it is. Requests are not copied: fakecri copies what it keeps of one (its call
// log, a container's or sandbox's config). TestAnswersAreTheAgents holds each answer to that.
type inProcess struct {
	rt *fakecri.Runtime
	// reply, when set, sees every answer (a copy) before the agent does and may change it: a
	// test's seam for feeding the agent answers no runtime gives (NodeOptions.replies).
	reply replyHook
}

// The unfiltered list requests of every relist and the status post's Version and Status requests,
// one each for every node: the runtime reads a request and keeps no part of it (its call log keeps
// copies), so they are never changed.
var (
	allSandboxes  = &runtimeapi.ListPodSandboxRequest{}
	allContainers = &runtimeapi.ListContainersRequest{}
	versionV1     = &runtimeapi.VersionRequest{Version: "v1"}
	notVerbose    = &runtimeapi.StatusRequest{}
)

// replyHook is handed each answer of method in turn; for a list, each item.
type replyHook func(method string, m proto.Message)

// replied hands m to the reply hook, if any, unless the call failed.
func replied[T proto.Message](c inProcess, method string, m T, err error) (T, error) {
	if err == nil && c.reply != nil {
		c.reply(method, m)
	}
	return m, err
}

// answerAll hands each item to the reply hook, if any, unless the call failed; with a hook the items
// are copied first, since fakecri may share data with lists it answers.
func answerAll[T proto.Message](c inProcess, method string, ms []T, err error) ([]T, error) {
	if err != nil || c.reply == nil {
		return ms, err
	}
	ms = cloneAll(ms)
	for _, m := range ms {
		c.reply(method, m)
	}
	return ms, nil
}

// answerOf hands a copy of a response the agent reads one field of to the reply hook, if any.
func answerOf[T proto.Message](c inProcess, method string, m T, err error) (T, error) {
	if err != nil || c.reply == nil {
		return m, err
	}
	return replied(c, method, proto.Clone(m).(T), nil)
}

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
	req := versionV1
	if v != req.Version {
		req = &runtimeapi.VersionRequest{Version: v}
	}
	r, err := c.rt.Version(ctx, req)
	return replied(c, "Version", r, err)
}

func (c inProcess) CreateContainer(ctx context.Context, sandbox string, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	r, err := c.rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sandbox, Config: cfg, SandboxConfig: sbCfg})
	r, err = answerOf(c, "CreateContainer", r, err)
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
	req := allContainers
	if f != nil {
		req = &runtimeapi.ListContainersRequest{Filter: f}
	}
	items, err := c.rt.Containers(ctx, req)
	return answerAll(c, "ListContainers", items, err)
}

func (c inProcess) ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	r, err := clone(c.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: verbose}))
	return replied(c, "ContainerStatus", r, err)
}

func (c inProcess) UpdateContainerResources(ctx context.Context, id string, res *runtimeapi.ContainerResources) error {
	_, err := c.rt.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: res.GetLinux(), Windows: res.GetWindows()})
	return err
}

func (c inProcess) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	r, err := c.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: int64(timeout.Seconds())})
	r, err = answerOf(c, "ExecSync", r, err)
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
	r, err := c.rt.Exec(ctx, req)
	return answerOf(c, "Exec", r, err)
}

func (c inProcess) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	r, err := c.rt.Attach(ctx, req)
	return answerOf(c, "Attach", r, err)
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
	r, err = answerOf(c, "RunPodSandbox", r, err)
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
	r, err := clone(c.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: verbose}))
	return replied(c, "PodSandboxStatus", r, err)
}

func (c inProcess) ListPodSandbox(ctx context.Context, f *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	req := allSandboxes
	if f != nil {
		req = &runtimeapi.ListPodSandboxRequest{Filter: f}
	}
	items, err := c.rt.PodSandboxes(ctx, req)
	return answerAll(c, "ListPodSandbox", items, err)
}

func (c inProcess) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	r, err := c.rt.PortForward(ctx, req)
	return answerOf(c, "PortForward", r, err)
}

func (c inProcess) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	r, err := c.rt.UpdatePodSandboxResources(ctx, req)
	return answerOf(c, "UpdatePodSandboxResources", r, err)
}

func (c inProcess) CheckpointPod(ctx context.Context, req *runtimeapi.CheckpointPodRequest) error {
	_, err := c.rt.CheckpointPod(ctx, req)
	return err
}

func (c inProcess) RestorePod(ctx context.Context, req *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	r, err := c.rt.RestorePod(ctx, req)
	return answerOf(c, "RestorePod", r, err)
}

func (c inProcess) ContainerStats(ctx context.Context, id string) (*runtimeapi.ContainerStats, error) {
	r, err := c.rt.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
	if err != nil {
		return nil, err
	}
	return replied(c, "ContainerStats", proto.Clone(r.GetStats()).(*runtimeapi.ContainerStats), nil)
}

func (c inProcess) ListContainerStats(ctx context.Context, f *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	r, err := c.rt.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: f})
	return answerAll(c, "ListContainerStats", cloneAll(r.GetStats()), err)
}

func (c inProcess) PodSandboxStats(ctx context.Context, id string) (*runtimeapi.PodSandboxStats, error) {
	r, err := c.rt.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: id})
	if err != nil {
		return nil, err
	}
	return replied(c, "PodSandboxStats", proto.Clone(r.GetStats()).(*runtimeapi.PodSandboxStats), nil)
}

func (c inProcess) ListPodSandboxStats(ctx context.Context, f *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	r, err := c.rt.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: f})
	return answerAll(c, "ListPodSandboxStats", cloneAll(r.GetStats()), err)
}

func (c inProcess) ListMetricDescriptors(ctx context.Context) ([]*runtimeapi.MetricDescriptor, error) {
	r, err := c.rt.ListMetricDescriptors(ctx, &runtimeapi.ListMetricDescriptorsRequest{})
	return answerAll(c, "ListMetricDescriptors", cloneAll(r.GetDescriptors()), err)
}

func (c inProcess) ListPodSandboxMetrics(ctx context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
	r, err := c.rt.ListPodSandboxMetrics(ctx, &runtimeapi.ListPodSandboxMetricsRequest{})
	return answerAll(c, "ListPodSandboxMetrics", cloneAll(r.GetPodMetrics()), err)
}

func (c inProcess) UpdateRuntimeConfig(ctx context.Context, cfg *runtimeapi.RuntimeConfig) error {
	_, err := c.rt.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: cfg})
	return err
}

func (c inProcess) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	req := notVerbose
	if verbose {
		req = &runtimeapi.StatusRequest{Verbose: true}
	}
	r, err := c.rt.Status(ctx, req)
	return replied(c, "Status", r, err)
}

func (c inProcess) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	r, err := c.rt.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
	return replied(c, "RuntimeConfig", r, err)
}

func (c inProcess) ListImages(ctx context.Context, f *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	r, err := c.rt.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: f})
	return answerAll(c, "ListImages", r.GetImages(), err)
}

func (c inProcess) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	r, err := c.rt.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: image, Verbose: verbose})
	return replied(c, "ImageStatus", r, err)
}

func (c inProcess) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sbCfg *runtimeapi.PodSandboxConfig) (string, error) {
	r, err := c.rt.PullImage(ctx, &runtimeapi.PullImageRequest{Image: image, Auth: auth, SandboxConfig: sbCfg})
	r, err = answerOf(c, "PullImage", r, err)
	return r.GetImageRef(), err
}

func (c inProcess) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	_, err := c.rt.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: image})
	return err
}

func (c inProcess) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	r, err := c.rt.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	return replied(c, "ImageFsInfo", r, err)
}

// Close has nothing to release: the world closes the runtime.
func (c inProcess) Close(context.Context) error { return nil }
