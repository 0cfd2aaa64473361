package podsync

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/pods/labels"
)

// killEvicted stops the evicted pod's containers within the override (minGracePeriod at least)
// and its sandboxes, then shows its containers as they ended; it stays Failed with the eviction's
// reason and message.
func (s *Syncer) killEvicted(ctx context.Context, p *PodState) error {
	if p.Evicted.done {
		return nil
	}
	sbs, ctrs, err := s.listPod(ctx, p.Pod.UID)
	if err != nil {
		return err
	}
	sortContainers(ctrs)
	// A hard eviction's override of 0 still leaves each container the least time any kill gives
	// it, as the kubelet's killContainer does (minimumGracePeriodInSeconds).
	grace := max(p.Evicted.Grace, minGracePeriod)
	for _, c := range ctrs {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		name := c.Labels[labels.ContainerName]
		s.rec.Eventf(events.ContainerReference(p.Pod, name), corev1.EventTypeNormal, ReasonKilling, "Killing", "Stopping container %s", name)
		if err := s.calls.Within(ctx, s.timeout+time.Duration(grace)*time.Second, func(ctx context.Context) error {
			return s.rt.StopContainer(ctx, c.Id, grace)
		}); err != nil {
			return fmt.Errorf("stopping container %s: %w", name, err)
		}
	}
	for _, sb := range sbs {
		if sb.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		if err := s.calls.Request(ctx, func(ctx context.Context) error { return s.rt.StopPodSandbox(ctx, sb.Id) }); err != nil {
			return fmt.Errorf("stopping sandbox %s: %w", sb.Id, err)
		}
	}
	statuses := map[string]*runtimeapi.ContainerStatus{}
	latest := map[string]uint32{}
	for _, c := range ctrs {
		name := c.Metadata.GetName()
		if a, seen := latest[name]; seen && a > c.Metadata.GetAttempt() {
			continue
		}
		var st *runtimeapi.ContainerStatus
		if err := s.calls.Request(ctx, func(ctx context.Context) error {
			resp, err := s.rt.ContainerStatus(ctx, c.Id, false)
			st = resp.GetStatus()
			return err
		}); err != nil {
			return fmt.Errorf("status of container %s: %w", name, err)
		}
		latest[name], statuses[name] = c.Metadata.GetAttempt(), st
	}
	for _, cs := range p.ctrs {
		cs.waiting = nil
	}
	s.setStatus(p, statuses)
	p.Evicted.done = true
	return nil
}
