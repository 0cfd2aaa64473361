package podsync

import (
	"slices"
	"sort"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/backoff"
	"orch.io/orch/components/orchlet/pods/labels"
	"orch.io/orch/components/orchlet/pods/prober"
)

// The decisions of a sync, Kubernetes' computePodActions and the rules it reads, as pure functions
// of the pod, what the runtime listed and reported, what the pod workers remember and the time.
// A sync reads each container's status just before it decides about that container and acts on
// it before it reads the next one, as it always has: deciding for every container at once would
// read their statuses earlier than the runtime calls of the containers before them, and change
// what the simulator's traces record.

// defaultGracePeriod is the API's default terminationGracePeriodSeconds.
const defaultGracePeriod = 30

// podActions is what a sync does with a pod before its containers.
type podActions struct {
	// deadlineExceeded says the pod ran past activeDeadlineSeconds now: it fails.
	deadlineExceeded bool
	// killPod says the pod is done (or past its deadline): its containers and sandbox stop, and
	// nothing starts again.
	killPod bool
	// deadline, when not zero, is when activeDeadlineSeconds passes: the sync looks again then.
	deadline time.Time
	// createSandbox says the pod has no one ready sandbox: a new one is made with attempt, what
	// is left of the old ones stopped first.
	createSandbox bool
	attempt       uint32
	// sandbox is the ready sandbox the containers run in.
	sandbox *runtimeapi.PodSandbox
}

// computePodActions decides for a pod started at start that is terminal ("" while it is not) at
// now, whose sandboxes are sbs: a terminal pod, or one past activeDeadlineSeconds, is killed;
// otherwise the latest sandbox is the pod's when it is the only one ready, or else a new one is made
// with the attempt after the highest.
func computePodActions(pod *corev1.Pod, start time.Time, terminal corev1.PodPhase, sbs []*runtimeapi.PodSandbox, now time.Time) podActions {
	var a podActions
	if d := pod.Spec.ActiveDeadlineSeconds; d != nil {
		deadline := start.Add(time.Duration(*d) * time.Second)
		if terminal == "" && !now.Before(deadline) {
			a.deadlineExceeded, terminal = true, corev1.PodFailed
		}
		a.deadline = deadline
	}
	if terminal != "" {
		return podActions{deadlineExceeded: a.deadlineExceeded, killPod: true}
	}
	var latest *runtimeapi.PodSandbox
	ready := 0
	for _, sb := range sbs {
		if at := sb.Metadata.GetAttempt(); at >= a.attempt {
			a.attempt = at + 1
		}
		if latest == nil || sb.Metadata.GetAttempt() > latest.Metadata.GetAttempt() {
			latest = sb
		}
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	// As Kubernetes' PodSandboxChanged: the latest sandbox is the pod's if it is the one ready;
	// several ready (one made while the runtime misreported another) are all stopped for a new one.
	if ready == 1 && latest.State == runtimeapi.PodSandboxState_SANDBOX_READY {
		a.sandbox = latest
	}
	a.createSandbox = a.sandbox == nil
	return a
}

// containerAction is what a sync does with one container.
type containerAction int

const (
	// startNew: no instance on the ready sandbox yet: create and start one.
	startNew containerAction = iota
	// killUnhealthy: the running instance failed its liveness or startup probe.
	killUnhealthy
	// killRedefined: the running instance was made from another image than the spec now names:
	// it is killed and restarted, whatever the restart policy.
	killRedefined
	// keepRunning: it runs; its probes watch it.
	keepRunning
	// startCreated: it was created but not started.
	startCreated
	// keepExited: it exited and the restart policy keeps it down.
	keepExited
	// backOff: it exited and waits for its crash-loop back-off, until backOffUntil.
	backOff
	// restartExited: it exited and a new instance starts.
	restartExited
	// unknown: the runtime knows not its state; it is left alone until it says more.
	unknown
)

// containerState is what a sync knows of a container when it decides about it.
type containerState struct {
	// latest is the latest instance on the ready sandbox (nil: none) and status its runtime
	// status, read just before.
	latest *runtimeapi.Container
	status *runtimeapi.ContainerStatus
	// policy is the restart policy the container follows: the pod's for a regular container,
	// Always for a sidecar, OnFailure or Never for a regular init container.
	policy corev1.RestartPolicy
	// probes are its running instance's probes; crash its crash-loop back-off.
	probes *prober.Container
	crash  backoff.Backoff
	// image is the image the spec names; redefined says the last instance was killed because it
	// was made from another.
	image     string
	redefined bool
}

// computeContainerAction decides for one container at now, as computePodActions does for each:
// one that never ran on the sandbox starts; a running instance made from another image than the
// spec names (its definition changed) is killed, to restart whatever the restart policy; one its
// liveness or startup probe condemned is killed, else kept; a created one starts; an exited one
// killed for its definition restarts at once; otherwise it stays down when the restart policy
// says so (Never, or OnFailure after a success), else waits out its crash-loop back-off from when
// it finished, else restarts.
func computeContainerAction(c containerState, now time.Time) (containerAction, time.Time) {
	if c.latest == nil {
		return startNew, time.Time{}
	}
	switch c.status.GetState() {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		// The image the instance was made from, as the spec named it then; a runtime that does not
		// say leaves the instance be.
		if made := c.latest.GetImage().GetUserSpecifiedImage(); made != "" && made != c.image {
			return killRedefined, time.Time{}
		}
		if c.probes.Kill != prober.None && c.probes.ProbedID == c.latest.Id {
			return killUnhealthy, time.Time{}
		}
		return keepRunning, time.Time{}
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return startCreated, time.Time{}
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		if c.redefined {
			return restartExited, time.Time{}
		}
		if c.policy == corev1.RestartPolicyNever || (c.policy == corev1.RestartPolicyOnFailure && c.status.ExitCode == 0) {
			return keepExited, time.Time{}
		}
		if until, wait := c.crash.WaitSince(time.Unix(0, c.status.FinishedAt), now); wait {
			return backOff, until
		}
		return restartExited, time.Time{}
	}
	return unknown, time.Time{}
}

// restartPolicy is the pod's restart policy, Always when the spec leaves it empty.
func restartPolicy(pod *corev1.Pod) corev1.RestartPolicy {
	if pod.Spec.RestartPolicy == "" {
		return corev1.RestartPolicyAlways
	}
	return pod.Spec.RestartPolicy
}

// initPolicy is how a regular init container restarts, as computeInitContainerActions: on failure,
// unless the pod's restartPolicy is Never.
func initPolicy(pod *corev1.Pod) corev1.RestartPolicy {
	if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
		return corev1.RestartPolicyNever
	}
	return corev1.RestartPolicyOnFailure
}

// initRanBefore says a regular container was created on the sandbox that is not exited: the init
// containers ran to completion before.
func initRanBefore(pod *corev1.Pod, latest map[string]*runtimeapi.Container) bool {
	for _, c := range pod.Spec.Containers {
		if l := latest[c.Name]; l != nil && l.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			return true
		}
	}
	return false
}

// initNext is where the pod's init containers stand after the sync of c, one of them, as
// computeInitContainerActions decides: a sidecar lets the next one run once it started (or once
// the pod was initialized); a regular one once it exited 0, its status read this sync (nil: it
// was just started), or at once when the pod was initialized before. A regular one that exited
// non-zero under policy Never fails the pod.
func initNext(c *corev1.Container, initialized bool, policy corev1.RestartPolicy, st *runtimeapi.ContainerStatus, started bool) (next, podFailed bool) {
	switch {
	case sidecar(c):
		return initialized || started, false
	case initialized:
		return true, false
	case st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED:
		return false, false
	case st.ExitCode != 0:
		return false, policy == corev1.RestartPolicyNever
	}
	return true, false
}

// podFinished is the terminal phase of a pod whose regular containers all exited (statuses, read
// this sync) and none will be restarted: restartPolicy Never, or OnFailure with every exit 0;
// Failed when one exited non-zero, else Succeeded. condemned says a container's exit is not yet
// the last word: it was to be killed (its probe failed), or restarts for a new definition. "" while
// the pod is not done.
func podFinished(pod *corev1.Pod, statuses map[string]*runtimeapi.ContainerStatus, condemned func(name string) bool) corev1.PodPhase {
	policy := pod.Spec.RestartPolicy
	if policy == "" || policy == corev1.RestartPolicyAlways || len(pod.Spec.Containers) == 0 {
		return ""
	}
	phase := corev1.PodSucceeded
	for _, c := range pod.Spec.Containers {
		st := statuses[c.Name]
		if st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || condemned(c.Name) {
			return ""
		}
		if st.ExitCode != 0 {
			if policy == corev1.RestartPolicyOnFailure {
				return ""
			}
			phase = corev1.PodFailed
		}
	}
	return phase
}

// orphanGrace is the grace period c stops with: for a pod the agent holds no spec of (an orphan,
// found in the runtime after a restart), the pod's recorded on the container when it was made, as
// the kubelet's restoreSpecsFromContainerLabels reads it; else the pod's.
func orphanGrace(pod *corev1.Pod, c *runtimeapi.Container) int64 {
	if len(pod.Spec.Containers) == 0 && pod.DeletionGracePeriodSeconds == nil && pod.Spec.TerminationGracePeriodSeconds == nil {
		if g, err := strconv.ParseInt(c.GetAnnotations()[labels.PodTerminationGracePeriod], 10, 64); err == nil && g >= 0 {
			return g
		}
	}
	return gracePeriod(pod)
}

// gracePeriod is the deletion's when the API server gave one, else the spec's.
func gracePeriod(pod *corev1.Pod) int64 {
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		return *g
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return *g
	}
	return defaultGracePeriod
}

// killGrace is the grace period for killing c: the deletion's, else a failed probe's own
// terminationGracePeriodSeconds, else the pod's, as the kubelet's setTerminationGracePeriod.
func killGrace(pod *corev1.Pod, c *corev1.Container, why prober.Type) int64 {
	if pod.DeletionGracePeriodSeconds == nil && c != nil {
		if pr := why.Of(c); pr != nil && pr.TerminationGracePeriodSeconds != nil {
			return *pr.TerminationGracePeriodSeconds
		}
	}
	return gracePeriod(pod)
}

// sortContainers orders containers by name, then attempt, so teardown acts in a stable order.
func sortContainers(cs []*runtimeapi.Container) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i].Metadata, cs[j].Metadata
		if a.GetName() != b.GetName() {
			return a.GetName() < b.GetName()
		}
		return a.GetAttempt() < b.GetAttempt()
	})
}

// terminationOrder is ctrs, sorted, with the pod's init containers moved to the end in reverse
// order of the spec, so that sidecars stop after the containers they serve, the last first.
func terminationOrder(pod *corev1.Pod, ctrs []*runtimeapi.Container) []*runtimeapi.Container {
	rank := map[string]int{}
	for i, c := range pod.Spec.InitContainers {
		rank[c.Name] = len(pod.Spec.InitContainers) - i
	}
	out := slices.Clone(ctrs)
	sort.SliceStable(out, func(i, j int) bool {
		return rank[out[i].Labels[labels.ContainerName]] < rank[out[j].Labels[labels.ContainerName]]
	})
	return out
}
