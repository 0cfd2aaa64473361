package agent

import (
	"context"
	"fmt"
	"net/url"
	"sort"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/labels"
	"orch.io/orch/components/orchlet/server"
)

// The agent answers the HTTPS server's streams from the runtime's streaming server.
var _ server.Streams = (*Agent)(nil)

// GetExec asks the runtime for the URL of an exec of cmd in the pod's container, as the kubelet's
// GetExec does.
func (a *Agent) GetExec(ctx context.Context, namespace, pod, uid, container string, cmd []string, opts server.StreamOptions) (*url.URL, error) {
	c, err := a.streamContainer(ctx, namespace, pod, uid, container)
	if err != nil {
		return nil, err
	}
	resp, err := a.runtime.Exec(ctx, &runtimeapi.ExecRequest{
		ContainerId: c.Id, Cmd: cmd, Tty: opts.TTY, Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr,
	})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.Url)
}

// GetAttach asks the runtime for the URL of an attach to the pod's container.
func (a *Agent) GetAttach(ctx context.Context, namespace, pod, uid, container string, opts server.StreamOptions) (*url.URL, error) {
	c, err := a.streamContainer(ctx, namespace, pod, uid, container)
	if err != nil {
		return nil, err
	}
	resp, err := a.runtime.Attach(ctx, &runtimeapi.AttachRequest{
		ContainerId: c.Id, Tty: opts.TTY, Stdin: opts.Stdin, Stdout: opts.Stdout, Stderr: opts.Stderr,
	})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.Url)
}

// GetPortForward asks the runtime for the URL forwarding to ports of the pod's sandbox (over
// SPDY the ports come later, in each stream's headers).
func (a *Agent) GetPortForward(ctx context.Context, namespace, pod, uid string, ports []int32) (*url.URL, error) {
	p, err := a.runningPod(namespace, pod, uid)
	if err != nil {
		return nil, err
	}
	sbs, err := a.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{labels.PodUID: string(p.UID)},
	})
	if err != nil {
		return nil, fmt.Errorf("listing pod sandboxes: %w", err)
	}
	if len(sbs) == 0 {
		return nil, fmt.Errorf("pod %s/%s has no ready sandbox: %w", namespace, pod, server.ErrNotFound)
	}
	sort.Slice(sbs, func(i, j int) bool { return sbs[i].CreatedAt > sbs[j].CreatedAt })
	resp, err := a.runtime.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sbs[0].Id, Port: ports})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.Url)
}

// RunInContainer runs cmd in the pod's container through the runtime's ExecSync and answers its
// standard output followed by its standard error, as the kubelet's RunInContainer; a non-zero
// exit is an error carrying the code.
func (a *Agent) RunInContainer(ctx context.Context, namespace, pod, uid, container string, cmd []string) ([]byte, error) {
	c, err := a.streamContainer(ctx, namespace, pod, uid, container)
	if err != nil {
		return nil, err
	}
	stdout, stderr, err := a.runtime.ExecSync(ctx, c.Id, cmd, a.execTimeout)
	out := append(stdout, stderr...)
	if err != nil {
		return out, fmt.Errorf("exec %v in %s/%s/%s: %w", cmd, namespace, pod, container, err)
	}
	return out, nil
}

// runningPod is the pod the agent runs under that name, which must have uid when one is given.
func (a *Agent) runningPod(namespace, name, uid string) (*corev1.Pod, error) {
	for _, p := range a.Pods.Pods() {
		if p.Namespace == namespace && p.Name == name {
			if uid != "" && string(p.UID) != uid {
				break
			}
			return &p, nil
		}
	}
	return nil, fmt.Errorf("pod %s/%s does not exist: %w", namespace, name, server.ErrNotFound)
}

// streamContainer is the newest container named container of the pod.
func (a *Agent) streamContainer(ctx context.Context, namespace, pod, uid, container string) (*runtimeapi.Container, error) {
	if _, err := a.runningPod(namespace, pod, uid); err != nil {
		return nil, err
	}
	return a.container(ctx, namespace, pod, container)
}
