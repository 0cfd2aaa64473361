package pods

import (
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// setStatus computes the pod's status from its containers' runtime statuses (nil: none yet) and
// the reasons the manager made them wait.
func (m *Manager) setStatus(p *podState, statuses map[string]*runtimeapi.ContainerStatus) {
	pod := p.pod
	st := corev1.PodStatus{PodIP: p.podIP, StartTime: p.started()}
	if p.podIP != "" {
		st.PodIPs = []corev1.PodIP{{IP: p.podIP}}
	}
	var waiting, running, stopped, succeeded int
	for _, c := range pod.Spec.Containers {
		cs := p.ctr(c.Name)
		rs := statuses[c.Name]
		out := corev1.ContainerStatus{Name: c.Name, Image: c.Image}
		if cs.lastTerm != nil {
			out.LastTerminationState.Terminated = cs.lastTerm.DeepCopy()
		}
		if rs != nil {
			out.ContainerID = m.runtimeName + "://" + rs.Id
			out.ImageID = rs.ImageRef
			out.RestartCount = int32(rs.GetMetadata().GetAttempt())
		}
		switch {
		case cs.waiting != nil:
			out.State.Waiting = cs.waiting.DeepCopy()
		case rs == nil || rs.State == runtimeapi.ContainerState_CONTAINER_CREATED:
			out.State.Waiting = &corev1.ContainerStateWaiting{Reason: waitCreating}
		case rs.State == runtimeapi.ContainerState_CONTAINER_RUNNING:
			out.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Unix(0, rs.StartedAt))}
			out.Ready = true
			t := true
			out.Started = &t
		default:
			out.State.Terminated = terminated(rs, out.ContainerID)
		}
		switch {
		case out.State.Running != nil:
			running++
		case out.State.Terminated != nil:
			stopped++
			if out.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case out.LastTerminationState.Terminated != nil:
			stopped++ // waiting to restart: it has run, as Kubernetes counts it
		default:
			waiting++
		}
		st.ContainerStatuses = append(st.ContainerStatuses, out)
	}
	st.Phase = phase(pod.Spec.RestartPolicy, waiting, running, stopped, succeeded)
	if p.evicted != nil {
		st.Phase, st.Reason, st.Message = corev1.PodFailed, p.evictReason, p.evictMessage
	}
	if !reflect.DeepEqual(p.status, st) { // built the same way each time: no semantic equality needed
		m.touched[pod.UID] = true
	}
	p.status = st
}

// phase is Kubernetes' getPhase for pods without init containers.
func phase(policy corev1.RestartPolicy, waiting, running, stopped, succeeded int) corev1.PodPhase {
	switch {
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0:
		switch {
		case policy == corev1.RestartPolicyAlways || policy == "":
			return corev1.PodRunning
		case stopped == succeeded:
			return corev1.PodSucceeded
		case policy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}
