package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/containerlogs"
	"orch.io/orch/components/orchlet/pods/labels"
	"orch.io/orch/components/orchlet/server"
)

// Summary answers /stats/summary from the runtime's statistics of the containers this agent runs.
func (a *Agent) Summary(ctx context.Context) (*server.Summary, error) {
	stats, err := a.runtime.ListContainerStats(ctx, &runtimeapi.ContainerStatsFilter{})
	if err != nil {
		return nil, fmt.Errorf("listing container stats: %w", err)
	}
	starts := map[string]metav1.Time{}
	for _, p := range a.Pods.Pods() {
		if p.Status.StartTime != nil {
			starts[string(p.UID)] = *p.Status.StartTime
		}
	}
	byPod := map[string]*server.PodStats{}
	for _, s := range stats {
		ls := s.GetAttributes().GetLabels()
		uid := ls[labels.PodUID]
		if uid == "" {
			continue // not this agent's container
		}
		p := byPod[uid]
		if p == nil {
			p = &server.PodStats{
				PodRef:     server.PodReference{Name: ls[labels.PodName], Namespace: ls[labels.PodNamespace], UID: uid},
				StartTime:  starts[uid],
				Containers: []server.ContainerStats{},
			}
			byPod[uid] = p
		}
		c := server.ContainerStats{Name: ls[labels.ContainerName], StartTime: starts[uid]}
		if cpu := s.GetCpu(); cpu != nil {
			c.CPU = &server.CPUStats{Time: nanos(cpu.Timestamp), UsageNanoCores: value(cpu.UsageNanoCores), UsageCoreNanoSeconds: value(cpu.UsageCoreNanoSeconds)}
		}
		if mem := s.GetMemory(); mem != nil {
			c.Memory = &server.MemoryStats{Time: nanos(mem.Timestamp), AvailableBytes: value(mem.AvailableBytes), UsageBytes: value(mem.UsageBytes), WorkingSetBytes: value(mem.WorkingSetBytes), RSSBytes: value(mem.RssBytes)}
		}
		p.Containers = append(p.Containers, c)
	}
	out := &server.Summary{Node: server.NodeStats{NodeName: a.node, StartTime: metav1.NewTime(a.started)}, Pods: []server.PodStats{}}
	for _, p := range byPod {
		sort.Slice(p.Containers, func(i, j int) bool { return p.Containers[i].Name < p.Containers[j].Name })
		out.Pods = append(out.Pods, *p)
	}
	sort.Slice(out.Pods, func(i, j int) bool {
		a, b := out.Pods[i].PodRef, out.Pods[j].PodRef
		return a.Namespace+"/"+a.Name < b.Namespace+"/"+b.Name
	})
	return out, nil
}

func nanos(ns int64) metav1.Time { return metav1.NewTime(time.Unix(0, ns).UTC()) }

func value(v *runtimeapi.UInt64Value) *uint64 {
	if v == nil {
		return nil
	}
	x := v.Value
	return &x
}

// container finds the newest container of namespace/pod named name that this agent created.
func (a *Agent) container(ctx context.Context, namespace, pod, name string) (*runtimeapi.Container, error) {
	return a.containerAttempt(ctx, namespace, pod, name, false)
}

// containerAttempt is container, or with previous the one before it, which the kubelet's
// previous=true logs read.
func (a *Agent) containerAttempt(ctx context.Context, namespace, pod, name string, previous bool) (*runtimeapi.Container, error) {
	cs, err := a.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{
		labels.PodNamespace: namespace, labels.PodName: pod, labels.ContainerName: name,
	}})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	if len(cs) == 0 {
		return nil, fmt.Errorf("container %q of pod %s/%s: %w", name, namespace, pod, server.ErrNotFound)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].CreatedAt > cs[j].CreatedAt })
	if !previous {
		return cs[0], nil
	}
	if len(cs) < 2 {
		return nil, fmt.Errorf("previous terminated container %q in pod %q not found: %w", name, pod, server.ErrNotFound)
	}
	return cs[1], nil
}

// ContainerLogs copies a container's log to out, reading the CRI log file the runtime reports and
// the files rotation made of it ("<time> <stream> <tag> <message>" per line) and writing the
// messages; with follow, it goes on until the container stops or the client goes.
func (a *Agent) ContainerLogs(ctx context.Context, namespace, pod, name string, opts *corev1.PodLogOptions, out io.Writer) error {
	c, err := a.containerAttempt(ctx, namespace, pod, name, opts != nil && opts.Previous)
	if err != nil {
		return err
	}
	status, err := a.runtime.ContainerStatus(ctx, c.Id, false)
	if err != nil {
		return fmt.Errorf("container status: %w", err)
	}
	path := status.GetStatus().GetLogPath()
	if path == "" {
		return fmt.Errorf("container %q of pod %s/%s has no log file: %w", name, namespace, pod, server.ErrNotFound)
	}
	running := func(ctx context.Context) bool {
		st, err := a.runtime.ContainerStatus(ctx, c.Id, false)
		return err == nil && st.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING
	}
	err = containerlogs.ReadLogs(ctx, path, opts, a.clk.Now(), out, &containerlogs.Follow{Clock: a.clk, Running: running, Watch: a.watchLogs})
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %w", err, server.ErrNotFound)
	}
	return err
}
