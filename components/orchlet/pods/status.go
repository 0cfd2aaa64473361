package pods

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Condition reasons, as Kubernetes' kubelet status generator gives them.
const (
	condPodCompleted      = "PodCompleted"
	condPodFailed         = "PodFailed"
	condNotReady          = "ContainersNotReady"
	condNotInitialized    = "ContainersNotInitialized"
	condReadinessGatesOff = "ReadinessGatesNotReady"
)

// setStatus computes the pod's status from its containers' runtime statuses (nil: none yet) and
// the reasons the manager made them wait: container states, ready and started as the probes say,
// the phase as Kubernetes' getPhase, and the kubelet's pod conditions.
func (m *Manager) setStatus(p *podState, statuses map[string]*runtimeapi.ContainerStatus) {
	pod := p.pod
	if statuses != nil {
		p.lastStatuses = statuses
	}
	st := corev1.PodStatus{PodIP: p.podIP, StartTime: p.started(), Reason: p.reason, Message: p.msg}
	if p.podIP != "" {
		st.PodIPs = []corev1.PodIP{{IP: p.podIP}}
	}
	hasInit := len(pod.Spec.InitContainers) > 0
	for i := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, m.containerStatus(p, &pod.Spec.InitContainers[i], statuses[pod.Spec.InitContainers[i].Name], true, waitCreating))
	}
	waitReason := waitCreating
	if hasInit && !p.initialized {
		waitReason = waitPodInitializing
	}
	for i := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, m.containerStatus(p, &pod.Spec.Containers[i], statuses[pod.Spec.Containers[i].Name], false, waitReason))
	}
	st.Phase = podPhase(pod, st, p.terminal, p.initialized)
	if p.terminal != "" {
		st.Phase = p.terminal
	}
	if p.evicted != nil {
		st.Phase, st.Reason, st.Message = corev1.PodFailed, p.evictReason, p.evictMessage
	}
	st.Conditions = m.conditions(p, st)
	if !reflect.DeepEqual(p.status, st) { // built the same way each time: no semantic equality needed
		m.touch(pod.UID)
	}
	p.status = st
}

// containerStatus is one container's status: regular init containers are ready once they
// succeeded; sidecars and regular containers once started and their readiness probe passed.
func (m *Manager) containerStatus(p *podState, c *corev1.Container, rs *runtimeapi.ContainerStatus, isInit bool, waitReason string) corev1.ContainerStatus {
	cs := p.ctr(c.Name)
	out := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: new(bool)}
	if cs.lastTerm != nil {
		out.LastTerminationState.Terminated = cs.lastTerm.DeepCopy()
	}
	if rs != nil {
		out.ContainerID = m.containerID(rs.Id)
		out.ImageID = rs.ImageRef
		out.RestartCount = int32(rs.GetMetadata().GetAttempt())
	}
	switch {
	case cs.waiting != nil:
		out.State.Waiting = cs.waiting.DeepCopy()
	case rs == nil || rs.State == runtimeapi.ContainerState_CONTAINER_CREATED:
		out.State.Waiting = &corev1.ContainerStateWaiting{Reason: waitReason}
	case rs.State == runtimeapi.ContainerState_CONTAINER_RUNNING:
		out.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Unix(0, rs.StartedAt))}
		if isInit && !sidecar(c) {
			*out.Started = true
		} else {
			*out.Started = cs.ProbedID == rs.Id && cs.Started(c)
			out.Ready = cs.ProbedID == rs.Id && cs.Ready(c)
		}
	default:
		out.State.Terminated = m.terminated(c, rs, out.ContainerID)
		out.Ready = isInit && !sidecar(c) && rs.ExitCode == 0
	}
	return out
}

// podPhase is Kubernetes' getPhase: regular init containers pending or a sidecar not yet started
// (before the pod initialized) keep the pod Pending, a failed init container under restartPolicy
// Never fails it; then the regular containers and sidecars as the restart policy says.
func podPhase(pod *corev1.Pod, st corev1.PodStatus, terminal corev1.PodPhase, initialized bool) corev1.PodPhase {
	pendingInit, pendingSidecars, failedInit := 0, 0, 0
	for i, c := range pod.Spec.InitContainers {
		cs := st.InitContainerStatuses[i]
		if sidecar(&c) {
			continue
		}
		switch {
		case cs.State.Terminated != nil:
			if cs.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			if cs.LastTerminationState.Terminated.ExitCode != 0 {
				failedInit++
			}
		default:
			pendingInit++
		}
	}
	var unknown, running, waiting, stopped, succeeded int
	for i, c := range pod.Spec.InitContainers {
		cs := st.InitContainerStatuses[i]
		if !sidecar(&c) {
			continue
		}
		switch {
		case cs.State.Running != nil:
			if !*cs.Started {
				pendingSidecars++
			}
			running++
		case cs.State.Terminated != nil, cs.LastTerminationState.Terminated != nil:
		default:
			pendingSidecars++
			waiting++
		}
	}
	for _, cs := range st.ContainerStatuses {
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.LastTerminationState.Terminated != nil:
			stopped++ // waiting to restart: it has run, as Kubernetes counts it
		default:
			waiting++
		}
	}
	if failedInit > 0 && pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	switch {
	case pendingInit > 0 || (pendingSidecars > 0 && !initialized), waiting > 0:
		return corev1.PodPending
	case running > 0 && unknown == 0:
		return corev1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if terminal != "" {
			if stopped == succeeded {
				return corev1.PodSucceeded
			}
			return corev1.PodFailed
		}
		switch {
		case pod.Spec.RestartPolicy == corev1.RestartPolicyAlways || pod.Spec.RestartPolicy == "":
			return corev1.PodRunning
		case stopped == succeeded:
			return corev1.PodSucceeded
		case pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

// conditions are the kubelet's: PodReadyToStartContainers (the sandbox is up; with its gate on, the
// default), Initialized,
// Ready, ContainersReady and PodScheduled, each keeping its last transition time while its
// status stays the same, as the status manager keeps it.
func (m *Manager) conditions(p *podState, st corev1.PodStatus) []corev1.PodCondition {
	pod := p.pod
	sandbox := corev1.ConditionFalse
	if p.sandboxReady {
		sandbox = corev1.ConditionTrue
	}
	containersReady := containersReadyCondition(pod, st)
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: containersReady.Status, Reason: containersReady.Reason, Message: containersReady.Message}
	if ready.Status == corev1.ConditionTrue {
		var msgs []string
		for _, g := range pod.Spec.ReadinessGates {
			c := findCondition(pod.Status.Conditions, g.ConditionType)
			switch {
			case c == nil:
				msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(g.ConditionType)))
			case c.Status != corev1.ConditionTrue:
				msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(g.ConditionType), c.Status))
			}
		}
		if len(msgs) > 0 {
			ready = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: condReadinessGatesOff, Message: strings.Join(msgs, ", ")}
		}
	}
	var out []corev1.PodCondition
	if m.readyToStart {
		out = append(out, corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: sandbox})
	}
	out = append(out, initializedCondition(pod, st), ready, containersReady, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
	now := metav1.NewTime(m.clk.Now())
	for i := range out {
		out[i].LastTransitionTime = now
		if old := findCondition(p.status.Conditions, out[i].Type); old != nil && old.Status == out[i].Status {
			out[i].LastTransitionTime = old.LastTransitionTime
		}
	}
	return out
}

func findCondition(cs []corev1.PodCondition, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// containersReadyCondition is the kubelet's GenerateContainersReadyCondition.
func containersReadyCondition(pod *corev1.Pod, st corev1.PodStatus) corev1.PodCondition {
	cond := corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse}
	switch st.Phase {
	case corev1.PodSucceeded:
		cond.Reason = condPodCompleted
		return cond
	case corev1.PodFailed:
		cond.Reason = condPodFailed
		return cond
	}
	var unready []string
	for i, c := range pod.Spec.InitContainers {
		if sidecar(&c) && !st.InitContainerStatuses[i].Ready {
			unready = append(unready, c.Name)
		}
	}
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	if len(unready) > 0 {
		cond.Reason, cond.Message = condNotReady, fmt.Sprintf("containers with unready status: %s", unready)
		return cond
	}
	cond.Status = corev1.ConditionTrue
	return cond
}

// initializedCondition is the kubelet's GeneratePodInitializedCondition.
func initializedCondition(pod *corev1.Pod, st corev1.PodStatus) corev1.PodCondition {
	cond := corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}
	if st.Phase == corev1.PodSucceeded {
		cond.Reason = condPodCompleted
		return cond
	}
	for _, cs := range st.ContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			return cond // a regular container has started: the pod was initialized
		}
	}
	var incomplete []string
	for i, c := range pod.Spec.InitContainers {
		cs := st.InitContainerStatuses[i]
		if sidecar(&c) && !*cs.Started || !sidecar(&c) && !cs.Ready {
			incomplete = append(incomplete, c.Name)
		}
	}
	if len(incomplete) > 0 {
		cond.Status, cond.Reason = corev1.ConditionFalse, condNotInitialized
		cond.Message = fmt.Sprintf("containers with incomplete status: %s", incomplete)
	}
	return cond
}
