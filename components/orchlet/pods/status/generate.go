package status

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/prober"
)

// Reasons a container waits, as the kubelet's status generator gives them.
const (
	// ContainerCreating: the container has not started yet.
	ContainerCreating = "ContainerCreating"
	// PodInitializing: a regular container waits for the init containers.
	PodInitializing = "PodInitializing"
)

// Kubernetes' kubelet figures for reading termination messages.
const (
	// maxTerminationMessage is how much of a termination message file is read.
	maxTerminationMessage = 4096
	// fallbackLogLines and fallbackLogBytes bound FallbackToLogsOnError's read of the log.
	fallbackLogLines = 80
	fallbackLogBytes = 2048
)

// Generator makes pods' statuses.
type Generator struct {
	// ReadyToStart is the PodReadyToStartContainersCondition gate: pods show that condition.
	ReadyToStart bool
	// ReadFile reads a file of the node by its absolute path: termination messages and logs.
	ReadFile func(name string) ([]byte, error)
	// ContainerID is the ID a status shows for the runtime's container id: <runtime>://<id>.
	ContainerID func(id string) string
}

// Pod is what the pod workers know of a pod beyond its containers' runtime statuses.
type Pod struct {
	Pod       *corev1.Pod
	PodIP     string
	StartTime time.Time
	// Reason and Message are the pod's (DeadlineExceeded).
	Reason, Message string
	// Terminal is the phase of a pod that is done, "" while it is not.
	Terminal corev1.PodPhase
	// Initialized says the regular containers have been started once.
	Initialized bool
	// SandboxReady says the sandbox last seen was ready: PodReadyToStartContainers.
	SandboxReady bool
	// Evicted says the eviction manager chose the pod: Failed with EvictReason and EvictMessage.
	Evicted                   bool
	EvictReason, EvictMessage string
	// Container is what the pod workers remember of the named container.
	Container func(name string) Container
	// Old is the pod's last status, whose conditions keep their transition times.
	Old *corev1.PodStatus
}

// Container is what the pod workers remember of a container across its instances.
type Container struct {
	// Waiting is why the container waits, when the pod workers decided it.
	Waiting *corev1.ContainerStateWaiting
	// LastTerm is the state of its last instance that exited.
	LastTerm *corev1.ContainerStateTerminated
	// Probes are its running instance's probe results.
	Probes *prober.Container
}

// Status computes the pod's status at now from its containers' runtime statuses (nil: none yet)
// and the reasons the pod workers made them wait: container states, ready and started as the probes
// say, the phase as Kubernetes' getPhase, and the kubelet's pod conditions.
func (g Generator) Status(p Pod, statuses map[string]*runtimeapi.ContainerStatus, now time.Time) corev1.PodStatus {
	pod := p.Pod
	start := metav1.NewTime(p.StartTime)
	st := corev1.PodStatus{PodIP: p.PodIP, StartTime: &start, Reason: p.Reason, Message: p.Message}
	if p.PodIP != "" {
		st.PodIPs = []corev1.PodIP{{IP: p.PodIP}}
	}
	hasInit := len(pod.Spec.InitContainers) > 0
	for i := range pod.Spec.InitContainers {
		st.InitContainerStatuses = append(st.InitContainerStatuses, g.containerStatus(p, &pod.Spec.InitContainers[i], statuses[pod.Spec.InitContainers[i].Name], true, ContainerCreating))
	}
	waitReason := ContainerCreating
	if hasInit && !p.Initialized {
		waitReason = PodInitializing
	}
	for i := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, g.containerStatus(p, &pod.Spec.Containers[i], statuses[pod.Spec.Containers[i].Name], false, waitReason))
	}
	// Ephemeral containers are never ready and have no startup probe: the kubelet leaves Started
	// unset.
	for i := range pod.Spec.EphemeralContainers {
		c := corev1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		cs := g.containerStatus(p, &c, statuses[c.Name], false, ContainerCreating)
		cs.Started, cs.Ready = nil, false
		st.EphemeralContainerStatuses = append(st.EphemeralContainerStatuses, cs)
	}
	st.Phase = podPhase(pod, st, p.Terminal, p.Initialized)
	if p.Terminal != "" {
		st.Phase = p.Terminal
	}
	if p.Evicted {
		st.Phase, st.Reason, st.Message = corev1.PodFailed, p.EvictReason, p.EvictMessage
	}
	st.Conditions = g.conditions(p, st, now)
	return st
}

// Condition reasons, as Kubernetes' kubelet status generator gives them.
const (
	condPodCompleted      = "PodCompleted"
	condPodFailed         = "PodFailed"
	condNotReady          = "ContainersNotReady"
	condNotInitialized    = "ContainersNotInitialized"
	condReadinessGatesOff = "ReadinessGatesNotReady"
)

// containerStatus is one container's status: regular init containers are ready once they
// succeeded; sidecars and regular containers once started and their readiness probe passed.
func (g Generator) containerStatus(p Pod, c *corev1.Container, rs *runtimeapi.ContainerStatus, isInit bool, waitReason string) corev1.ContainerStatus {
	cs := p.Container(c.Name)
	out := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: new(bool)}
	if cs.LastTerm != nil {
		out.LastTerminationState.Terminated = cs.LastTerm.DeepCopy()
	}
	if rs != nil {
		out.ContainerID = g.ContainerID(rs.Id)
		out.ImageID = rs.ImageRef
		out.RestartCount = int32(rs.GetMetadata().GetAttempt())
	}
	switch {
	case cs.Waiting != nil:
		out.State.Waiting = cs.Waiting.DeepCopy()
	case rs == nil || rs.State == runtimeapi.ContainerState_CONTAINER_CREATED:
		out.State.Waiting = &corev1.ContainerStateWaiting{Reason: waitReason}
	case rs.State == runtimeapi.ContainerState_CONTAINER_RUNNING:
		out.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Unix(0, rs.StartedAt))}
		if isInit && !sidecar(c) {
			*out.Started = true
		} else {
			*out.Started = cs.Probes.ProbedID == rs.Id && cs.Probes.Started(c)
			out.Ready = cs.Probes.ProbedID == rs.Id && cs.Probes.Ready(c)
		}
	default:
		out.State.Terminated = g.Terminated(c, rs, out.ContainerID)
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
func (g Generator) conditions(p Pod, st corev1.PodStatus, at time.Time) []corev1.PodCondition {
	pod := p.Pod
	sandbox := corev1.ConditionFalse
	if p.SandboxReady {
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
	if g.ReadyToStart {
		out = append(out, corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: sandbox})
	}
	out = append(out, initializedCondition(pod, st), ready, containersReady, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
	now := metav1.NewTime(at)
	for i := range out {
		out[i].LastTransitionTime = now
		if old := findCondition(p.Old.Conditions, out[i].Type); old != nil && old.Status == out[i].Status {
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

// Terminated is an exited instance's state, its message followed by its termination message.
func (g Generator) Terminated(c *corev1.Container, st *runtimeapi.ContainerStatus, id string) *corev1.ContainerStateTerminated {
	msg := st.Message
	if tm := g.terminationMessage(c, st); tm != "" {
		if msg != "" {
			msg += ": "
		}
		msg += tm
	}
	return &corev1.ContainerStateTerminated{
		ExitCode:    st.ExitCode,
		Reason:      st.Reason,
		Message:     msg,
		StartedAt:   metav1.NewTime(time.Unix(0, st.StartedAt)),
		FinishedAt:  metav1.NewTime(time.Unix(0, st.FinishedAt)),
		ContainerID: id,
	}
}

// terminationMessage is what the kubelet adds to an exited container's message: the file at
// terminationMessagePath (found among the container's mounts), or with FallbackToLogsOnError and
// a failure, the end of its log when the file says nothing.
func (g Generator) terminationMessage(c *corev1.Container, st *runtimeapi.ContainerStatus) string {
	if c == nil || st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		return ""
	}
	fallback := c.TerminationMessagePolicy == corev1.TerminationMessageFallbackToLogsOnError && st.ExitCode != 0 && st.Reason != "ContainerCannotRun"
	path := c.TerminationMessagePath
	if path == "" {
		path = corev1.TerminationMessagePathDefault
	}
	for _, mnt := range st.Mounts {
		if mnt.ContainerPath != path {
			continue
		}
		data, err := g.ReadFile(mnt.HostPath)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return fmt.Sprintf("Error on reading termination log %s: %v", mnt.HostPath, err)
		}
		if len(data) > maxTerminationMessage {
			data = data[len(data)-maxTerminationMessage:]
		}
		if len(data) > 0 || !fallback {
			return string(data)
		}
	}
	if !fallback || st.LogPath == "" {
		return ""
	}
	data, err := g.ReadFile(st.LogPath)
	if err != nil {
		return ""
	}
	return lastLogLines(data)
}

// lastLogLines is the text of the last lines of a CRI log file ("<time> <stream> <tag> <text>"
// per line), at most 80 lines and 2048 bytes, as the kubelet's fallback reads them.
func lastLogLines(data []byte) string {
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > fallbackLogLines {
		lines = lines[len(lines)-fallbackLogLines:]
	}
	var b strings.Builder
	for _, l := range lines {
		f := bytes.SplitN(l, []byte(" "), 4)
		if len(f) == 4 {
			l = f[3]
			if f[2][0] == 'F' {
				l = append(l, '\n')
			}
		} else {
			l = append(l, '\n')
		}
		b.Write(l)
	}
	out := b.String()
	if len(out) > fallbackLogBytes {
		out = out[len(out)-fallbackLogBytes:]
	}
	return out
}

// sidecar is Kubernetes' IsRestartableInitContainer: an init container with restartPolicy Always.
func sidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}
