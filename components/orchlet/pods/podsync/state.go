package podsync

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/backoff"
	"orch.io/orch/components/orchlet/pods/images"
	"orch.io/orch/components/orchlet/pods/prober"
	"orch.io/orch/components/orchlet/pods/volumes"
)

// PodState is what the pod workers know of one pod across its syncs. Only the pod's worker reads or
// changes it while a sync or probe of the pod runs.
type PodState struct {
	// Pod is the pod as its source last gave it.
	Pod *corev1.Pod
	// Status is the pod's latest status, for the pod workers to publish.
	Status corev1.PodStatus
	// Rejected is the admission failure message of a pod that never runs.
	Rejected string
	// Removed says the pod left its sources (or was found orphaned): its sync tears it down.
	Removed bool
	// Gone says the teardown finished: the pod workers forget the pod.
	Gone bool
	// Evicted is set once the eviction manager chose the pod.
	Evicted *Eviction

	startTime time.Time
	sandboxID string
	podIP     string
	ctrs      map[string]*ctrState
	// terminal is the phase (Succeeded or Failed) of a pod that is done: its containers are
	// stopped and none is started again, as Kubernetes' kubelet treats a terminal pod.
	terminal     corev1.PodPhase
	reason, msg  string // the pod status reason and message (DeadlineExceeded)
	sandboxReady bool   // the sandbox last seen was ready: PodReadyToStartContainers
	initialized  bool   // the regular containers have been started once: init is done
	lastStatuses map[string]*runtimeapi.ContainerStatus
	deferred     map[string]deferredStop // by container id: stops waiting for a preStop sleep
	holdUntil    time.Time               // no container starts before: a postStart sleep runs
	// imageVolumes are the pod's image volumes made present, with their pull back-offs.
	imageVolumes images.Volumes
	// changedRuntime says a sync asked the runtime to run, create, start or stop one of the
	// pod's sandboxes or containers since ChangedRuntime was last asked.
	changedRuntime bool
}

// ChangedRuntime reports whether the syncs since it was last asked had the runtime run, create,
// start or stop one of the pod's sandboxes or containers: what the relist read before then is
// not what the pod's next sync may decide on.
func (p *PodState) ChangedRuntime() bool {
	changed := p.changedRuntime
	p.changedRuntime = false
	return changed
}

// Eviction is the eviction manager's kill of a pod: its grace period override, and the reason and
// message its status keeps.
type Eviction struct {
	Grace           int64
	Reason, Message string
	done            bool // its containers and sandboxes are stopped
}

// ctrState is what the pod workers remember of one container of a pod across its instances.
type ctrState struct {
	crash    backoff.Backoff
	pull     backoff.Backoff
	waiting  *corev1.ContainerStateWaiting // why the container waits, when the pod workers decided it
	lastTerm *corev1.ContainerStateTerminated
	// redefined says the last instance was killed because the spec names another image now.
	redefined bool
	// Container is what the probes know of the running instance.
	prober.Container
}

// NewPodState is the state of a pod first seen at now, Pending.
func NewPodState(pod *corev1.Pod, now time.Time) *PodState {
	return &PodState{
		Pod: pod, startTime: now, ctrs: map[string]*ctrState{},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

// Reject fails the pod for good at its admission: it never runs.
func (p *PodState) Reject(reason, message string) {
	p.Rejected = message
	p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: reason, Message: message}
}

// container finds a container of the spec by name, init containers included.
func (p *PodState) container(name string) (*corev1.Container, bool) {
	for i := range p.Pod.Spec.InitContainers {
		if c := &p.Pod.Spec.InitContainers[i]; c.Name == name {
			return c, true
		}
	}
	for i := range p.Pod.Spec.Containers {
		if c := &p.Pod.Spec.Containers[i]; c.Name == name {
			return c, false
		}
	}
	return nil, false
}

// sidecar is Kubernetes' IsRestartableInitContainer: an init container with restartPolicy Always.
func sidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func (p *PodState) ctr(name string) *ctrState {
	c := p.ctrs[name]
	if c == nil {
		c = &ctrState{}
		p.ctrs[name] = c
	}
	return c
}

// volumes is the pod as its volumes see it.
func (p *PodState) volumes() volumes.Pod {
	return volumes.Pod{Pod: p.Pod, PodIP: p.podIP, ImageVolumes: p.imageVolumes.Refs}
}
