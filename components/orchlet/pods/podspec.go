package pods

import (
	"context"
	"fmt"

	"orch.io/orch/components/orchlet/events"

	corev1 "k8s.io/api/core/v1"
)

// waitCreateConfigError is the waiting reason of a container whose config could not be made
// (a runAsNonRoot image running as root, an env reference that does not resolve), as the kubelet's.
const waitCreateConfigError = "CreateContainerConfigError"

// ReasonFailedCreatePodContainer is the kubelet's event for a pod cgroup it could not make.
const ReasonFailedCreatePodContainer = "FailedCreatePodContainer"

// preparePod makes what the pod needs on the host before its sandbox, as the kubelet's SyncPod
// does: the pod cgroup (pod container manager's EnsureExists) and its volumes.
func (m *Manager) preparePod(ctx context.Context, p *podState) error {
	if err := m.volumes.SetUp(ctx, p.volumes()); err != nil {
		return err
	}
	if err := m.qos.EnsurePod(p.pod, m.livePods); err != nil {
		m.rec.Eventf(events.PodReference(p.pod), corev1.EventTypeWarning, ReasonFailedCreatePodContainer, "Sync", "unable to ensure pod container exists: %v", err)
		return fmt.Errorf("pod cgroup: %w", err)
	}
	return nil
}

// cleanupPod removes what preparePod made, once the runtime holds nothing of the pod.
func (m *Manager) cleanupPod(pod *corev1.Pod) error {
	if err := m.volumes.TearDown(pod); err != nil {
		return fmt.Errorf("removing the pod's volumes: %w", err)
	}
	return m.qos.RemovePod(pod, m.livePods)
}

// livePods are the admitted pods not being removed, whose requests size the QoS cgroups.
func (m *Manager) livePods() []*corev1.Pod {
	m.shared.Lock()
	defer m.shared.Unlock()
	var out []*corev1.Pod
	for _, p := range m.pods {
		if p.rejected == "" && !p.removed {
			out = append(out, p.pod)
		}
	}
	return out
}

// createFailed records a container whose config could not be made: waiting with
// CreateContainerConfigError and a Warning event, as the kubelet's startContainer.
func (m *Manager) createFailed(p *podState, c *corev1.Container, err error) error {
	p.ctr(c.Name).waiting = &corev1.ContainerStateWaiting{Reason: waitCreateConfigError, Message: err.Error()}
	m.rec.Eventf(events.ContainerReference(p.pod, c.Name), corev1.EventTypeWarning, ReasonFailed, "Create", "Error: %v", err)
	return fmt.Errorf("container %s config: %w", c.Name, err)
}
