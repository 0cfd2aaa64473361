package pods

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/backoff"
	"orch.io/orch/components/orchlet/pods/images"
	"orch.io/orch/components/orchlet/pods/prober"
	"orch.io/orch/components/orchlet/pods/volumes"
)

// ReasonOutOfPods is the admission failure of a pod beyond the node's capacity, as Kubernetes'.
const ReasonOutOfPods = "OutOfpods"

// podState is what the manager knows of one pod.
type podState struct {
	pod       *corev1.Pod
	startTime time.Time
	rejected  string // admission failure message; the pod never runs
	removed   bool   // left the sources (or was found orphaned): tear it down
	gone      bool   // torn down: to be forgotten once its worker is done
	sandboxID string
	podIP     string
	ctrs      map[string]*ctrState
	syncErr   backoff.Backoff
	status    corev1.PodStatus
	snap      *corev1.Pod // the copy Pods last published; nil once the pod was touched since
	// terminal is the phase (Succeeded or Failed) of a pod that is done: its containers are
	// stopped and none is started again, as Kubernetes' kubelet treats a terminal pod.
	terminal     corev1.PodPhase
	reason, msg  string // the pod status reason and message (DeadlineExceeded)
	sandboxReady bool   // the sandbox last seen was ready: PodReadyToStartContainers
	initialized  bool   // the regular containers have been started once: init is done
	lastStatuses map[string]*runtimeapi.ContainerStatus
	deferred     map[string]deferredStop // by container id: stops waiting for a preStop sleep
	holdUntil    time.Time               // no container starts before: a postStart sleep runs
	// evicted is set once the eviction manager chose the pod; its status keeps evictReason and
	// evictMessage.
	evicted                   *evicted
	evictReason, evictMessage string
	// imageVolumes are the pod's image volumes made present, with their pull back-offs.
	imageVolumes images.Volumes
}

// ctrState is what the manager remembers of one container of a pod across its instances.
type ctrState struct {
	crash    backoff.Backoff
	pull     backoff.Backoff
	waiting  *corev1.ContainerStateWaiting // why the container waits, when the manager decided it
	lastTerm *corev1.ContainerStateTerminated
	// Container is what the probes know of the running instance.
	prober.Container
}

func newPodState(pod *corev1.Pod, now time.Time) *podState {
	return &podState{
		pod: pod, startTime: now, ctrs: map[string]*ctrState{},
		status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

func (p *podState) syncKey() itemKey {
	return itemKey{kind: kindSync, namespace: p.pod.Namespace, name: p.pod.Name, uid: p.pod.UID}
}

func (p *podState) probeKey(container string, t prober.Type) itemKey {
	return itemKey{kind: kindProbe, namespace: p.pod.Namespace, name: p.pod.Name, uid: p.pod.UID, container: container, probe: t}
}

// container finds a container of the spec by name, init containers included.
func (p *podState) container(name string) (*corev1.Container, bool) {
	for i := range p.pod.Spec.InitContainers {
		if c := &p.pod.Spec.InitContainers[i]; c.Name == name {
			return c, true
		}
	}
	for i := range p.pod.Spec.Containers {
		if c := &p.pod.Spec.Containers[i]; c.Name == name {
			return c, false
		}
	}
	return nil, false
}

// sidecar is Kubernetes' IsRestartableInitContainer: an init container with restartPolicy Always.
func sidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func (p *podState) ctr(name string) *ctrState {
	c := p.ctrs[name]
	if c == nil {
		c = &ctrState{}
		p.ctrs[name] = c
	}
	return c
}

func (p *podState) reject(message string) {
	p.rejected = message
	p.status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: ReasonOutOfPods, Message: message}
}

// volumes is the pod as its volumes see it.
func (p *podState) volumes() volumes.Pod {
	return volumes.Pod{Pod: p.pod, PodIP: p.podIP, ImageVolumes: p.imageVolumes.Refs}
}
