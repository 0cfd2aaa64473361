package podsync

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/orchlet/events"
)

// waitCreateConfigError is the waiting reason of a container whose config could not be made
// (a runAsNonRoot image running as root, an env reference that does not resolve), as the kubelet's.
const waitCreateConfigError = "CreateContainerConfigError"

// ReasonFailedCreatePodContainer is the kubelet's event for a pod cgroup it could not make.
const ReasonFailedCreatePodContainer = "FailedCreatePodContainer"

// preparePod makes what the pod needs on the host before its sandbox, as the kubelet's SyncPod
// does: the pod cgroup (pod container manager's EnsureExists) and its volumes.
func (s *Syncer) preparePod(ctx context.Context, p *PodState) error {
	if err := s.volumes.SetUp(ctx, p.volumes()); err != nil {
		return err
	}
	if err := s.qos.EnsurePod(p.Pod, s.livePods); err != nil {
		s.rec.Eventf(events.PodReference(p.Pod), corev1.EventTypeWarning, ReasonFailedCreatePodContainer, "Sync", "unable to ensure pod container exists: %v", err)
		return fmt.Errorf("pod cgroup: %w", err)
	}
	return nil
}

// cleanupPod removes what preparePod made, once the runtime holds nothing of the pod.
func (s *Syncer) cleanupPod(pod *corev1.Pod) error {
	if err := s.volumes.TearDown(pod); err != nil {
		return fmt.Errorf("removing the pod's volumes: %w", err)
	}
	return s.qos.RemovePod(pod, s.livePods)
}

// createFailed records a container whose config could not be made: waiting with
// CreateContainerConfigError and a Warning event, as the kubelet's startContainer.
func (s *Syncer) createFailed(p *PodState, c *corev1.Container, err error) error {
	p.ctr(c.Name).waiting = &corev1.ContainerStateWaiting{Reason: waitCreateConfigError, Message: err.Error()}
	s.rec.Eventf(events.ContainerReference(p.Pod, c.Name), corev1.EventTypeWarning, ReasonFailed, "Create", "Error: %v", err)
	return fmt.Errorf("container %s config: %w", c.Name, err)
}
