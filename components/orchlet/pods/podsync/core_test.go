package podsync

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"orch.io/orch/components/orchlet/pods/backoff"
	"orch.io/orch/components/orchlet/pods/labels"
	"orch.io/orch/components/orchlet/pods/prober"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func sandbox(id string, attempt uint32, state runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{Id: id, State: state, Metadata: &runtimeapi.PodSandboxMetadata{Attempt: attempt}}
}

const (
	ready    = runtimeapi.PodSandboxState_SANDBOX_READY
	notReady = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
)

// Each row is a rule of the pod-level half of Kubernetes' computePodActions.
func TestComputePodActions(t *testing.T) {
	sb0, sb1 := sandbox("sb0", 0, ready), sandbox("sb1", 1, ready)
	for _, tc := range []struct {
		name     string
		deadline *int64 // activeDeadlineSeconds
		terminal corev1.PodPhase
		sbs      []*runtimeapi.PodSandbox
		now      time.Duration // since the pod started
		want     podActions
	}{
		{name: "no sandbox: the first is made, attempt 0", want: podActions{createSandbox: true}},
		{name: "the sandbox is not ready: a new one with the next attempt",
			sbs: []*runtimeapi.PodSandbox{sandbox("sb0", 0, notReady)}, want: podActions{createSandbox: true, attempt: 1}},
		{name: "the attempt follows the highest, ready or not",
			sbs: []*runtimeapi.PodSandbox{sandbox("sb3", 3, notReady), sandbox("sb1", 1, notReady)}, want: podActions{createSandbox: true, attempt: 4}},
		{name: "a ready sandbox is the pod's", sbs: []*runtimeapi.PodSandbox{sb0}, want: podActions{attempt: 1, sandbox: sb0}},
		{name: "two ready sandboxes: both stopped for a new one", sbs: []*runtimeapi.PodSandbox{sb1, sb0}, want: podActions{createSandbox: true, attempt: 2}},
		{name: "the latest not ready, an older ready: a new one", sbs: []*runtimeapi.PodSandbox{sb0, sandbox("sb1", 1, notReady)}, want: podActions{createSandbox: true, attempt: 2}},
		{name: "the latest ready, older ones not", sbs: []*runtimeapi.PodSandbox{sandbox("sb0", 0, notReady), sb1}, want: podActions{attempt: 2, sandbox: sb1}},
		{name: "a terminal pod is killed, its sandbox kept out of it", terminal: corev1.PodSucceeded, sbs: []*runtimeapi.PodSandbox{sb0},
			want: podActions{killPod: true}},
		{name: "past activeDeadlineSeconds: failed and killed", deadline: ptr.To[int64](30), now: 30 * time.Second, sbs: []*runtimeapi.PodSandbox{sb0},
			want: podActions{deadlineExceeded: true, killPod: true}},
		{name: "before activeDeadlineSeconds: looked at again then", deadline: ptr.To[int64](30), now: 29 * time.Second, sbs: []*runtimeapi.PodSandbox{sb0},
			want: podActions{deadline: t0.Add(30 * time.Second), attempt: 1, sandbox: sb0}},
		{name: "a pod already terminal does not exceed its deadline again", deadline: ptr.To[int64](30), terminal: corev1.PodFailed, now: time.Minute,
			want: podActions{killPod: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: tc.deadline}}
			if got := computePodActions(pod, t0, tc.terminal, tc.sbs, t0.Add(tc.now)); got != tc.want {
				t.Errorf("%+v, want %+v", got, tc.want)
			}
		})
	}
}

func instance(id string, attempt uint32) *runtimeapi.Container {
	return &runtimeapi.Container{Id: id, Metadata: &runtimeapi.ContainerMetadata{Attempt: attempt}}
}

func running(id string) *runtimeapi.ContainerStatus {
	return &runtimeapi.ContainerStatus{Id: id, State: runtimeapi.ContainerState_CONTAINER_RUNNING}
}

func exited(code int32, finished time.Duration) *runtimeapi.ContainerStatus {
	return &runtimeapi.ContainerStatus{State: runtimeapi.ContainerState_CONTAINER_EXITED, ExitCode: code, FinishedAt: t0.Add(finished).UnixNano()}
}

// Each row is a rule of the container-level half of computePodActions: restart policies, the
// crash-loop back-off, probes that condemn an instance.
func TestComputeContainerAction(t *testing.T) {
	condemned := func(id string) *prober.Container {
		var s prober.Container
		s.Watch(id)
		s.Kill = prober.Liveness
		return &s
	}
	var failedOnce backoff.Backoff // a crash at 0s set a 10s back-off
	failedOnce.Next(t0, t0)
	madeFrom := func(id, image string) *runtimeapi.Container {
		c := instance(id, 0)
		c.Image = &runtimeapi.ImageSpec{Image: "sha256:1", UserSpecifiedImage: image}
		return c
	}
	for _, tc := range []struct {
		name      string
		latest    *runtimeapi.Container
		status    *runtimeapi.ContainerStatus
		policy    corev1.RestartPolicy
		probes    *prober.Container
		crash     backoff.Backoff
		redefined bool
		now       time.Duration
		want      containerAction
		until     time.Duration
	}{
		{name: "never ran on the sandbox: started", policy: corev1.RestartPolicyNever, want: startNew},
		{name: "running: kept", latest: instance("c1", 0), status: running("c1"), policy: corev1.RestartPolicyAlways, want: keepRunning},
		{name: "running, its liveness probe failed: killed", latest: instance("c1", 0), status: running("c1"), policy: corev1.RestartPolicyNever,
			probes: condemned("c1"), want: killUnhealthy},
		{name: "running, an earlier instance was condemned: kept", latest: instance("c2", 1), status: running("c2"), policy: corev1.RestartPolicyAlways,
			probes: condemned("c1"), want: keepRunning},
		{name: "created, not started: started", latest: instance("c1", 0), status: &runtimeapi.ContainerStatus{State: runtimeapi.ContainerState_CONTAINER_CREATED},
			policy: corev1.RestartPolicyAlways, want: startCreated},
		{name: "Always restarts a success", latest: instance("c1", 0), status: exited(0, 0), policy: corev1.RestartPolicyAlways, want: restartExited},
		{name: "Always restarts a failure", latest: instance("c1", 0), status: exited(1, 0), policy: corev1.RestartPolicyAlways, want: restartExited},
		{name: "OnFailure keeps a success down", latest: instance("c1", 0), status: exited(0, 0), policy: corev1.RestartPolicyOnFailure, want: keepExited},
		{name: "OnFailure restarts a failure", latest: instance("c1", 0), status: exited(1, 0), policy: corev1.RestartPolicyOnFailure, want: restartExited},
		{name: "Never keeps a failure down", latest: instance("c1", 0), status: exited(1, 0), policy: corev1.RestartPolicyNever, want: keepExited},
		{name: "Never keeps a success down", latest: instance("c1", 0), status: exited(0, 0), policy: corev1.RestartPolicyNever, want: keepExited},
		{name: "a crash within its back-off waits until the back-off after it finished", latest: instance("c1", 1), status: exited(1, 5*time.Second),
			policy: corev1.RestartPolicyAlways, crash: failedOnce, now: 6 * time.Second, want: backOff, until: 15 * time.Second},
		{name: "a crash whose back-off ran out restarts", latest: instance("c1", 1), status: exited(1, 5*time.Second),
			policy: corev1.RestartPolicyAlways, crash: failedOnce, now: 15 * time.Second, want: restartExited},
		{name: "the back-off does not hold a policy that keeps it down", latest: instance("c1", 1), status: exited(1, 5*time.Second),
			policy: corev1.RestartPolicyNever, crash: failedOnce, now: 6 * time.Second, want: keepExited},
		{name: "running from the image the spec names: kept", latest: madeFrom("c1", "app:1"), status: running("c1"), policy: corev1.RestartPolicyNever, want: keepRunning},
		{name: "running from another image than the spec names: killed for its new definition", latest: madeFrom("c1", "app:0"), status: running("c1"),
			policy: corev1.RestartPolicyNever, want: killRedefined},
		{name: "a changed definition comes before a failed probe", latest: madeFrom("c1", "app:0"), status: running("c1"), policy: corev1.RestartPolicyAlways,
			probes: condemned("c1"), want: killRedefined},
		{name: "killed for its new definition: restarted whatever the policy", latest: instance("c1", 0), status: exited(0, 0), policy: corev1.RestartPolicyNever,
			redefined: true, want: restartExited},
		{name: "killed for its new definition: restarted without waiting for the back-off", latest: instance("c1", 1), status: exited(137, 5*time.Second),
			policy: corev1.RestartPolicyAlways, crash: failedOnce, redefined: true, now: 6 * time.Second, want: restartExited},
		{name: "an unknown state is left alone", latest: instance("c1", 0), status: &runtimeapi.ContainerStatus{State: runtimeapi.ContainerState_CONTAINER_UNKNOWN},
			policy: corev1.RestartPolicyAlways, want: unknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probes := tc.probes
			if probes == nil {
				probes = &prober.Container{}
			}
			got, until := computeContainerAction(containerState{latest: tc.latest, status: tc.status, policy: tc.policy, probes: probes, crash: tc.crash,
				image: "app:1", redefined: tc.redefined}, t0.Add(tc.now))
			var wantUntil time.Time
			if tc.until != 0 {
				wantUntil = t0.Add(tc.until)
			}
			if got != tc.want || !until.Equal(wantUntil) {
				t.Errorf("%v until %v, want %v until %v", got, until, tc.want, wantUntil)
			}
		})
	}
}

// initWalk runs the rules of computeInitContainerActions over a pod's init containers as a sync
// reaches them in order: the names it syncs (a regular one only before the pod initialized),
// whether the pod is initialized, and whether it fails. statuses are each container's status read
// this sync (absent: none on the sandbox yet).
func initWalk(pod *corev1.Pod, initialized bool, statuses map[string]*runtimeapi.ContainerStatus, started map[string]bool) (synced []string, done, failed bool) {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if sidecar(c) || !initialized {
			synced = append(synced, c.Name)
		}
		next, fails := initNext(c, initialized, initPolicy(pod), statuses[c.Name], started[c.Name])
		if !next {
			return synced, false, fails
		}
	}
	return synced, true, false
}

// Init containers run one at a time in order, each to success before the next; a sidecar is done
// once started; a failure restarts the container, or fails the pod under restartPolicy Never.
func TestInitContainers(t *testing.T) {
	side := corev1.Container{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}
	for _, tc := range []struct {
		name        string
		policy      corev1.RestartPolicy
		inits       []corev1.Container
		initialized bool
		statuses    map[string]*runtimeapi.ContainerStatus
		started     map[string]bool
		synced      []string
		done        bool
		failed      bool
	}{
		{name: "the first runs alone", inits: []corev1.Container{{Name: "a"}, {Name: "b"}}, synced: []string{"a"}},
		{name: "a running init container holds the next", inits: []corev1.Container{{Name: "a"}, {Name: "b"}},
			statuses: map[string]*runtimeapi.ContainerStatus{"a": running("a")}, synced: []string{"a"}},
		{name: "a success lets the next run", inits: []corev1.Container{{Name: "a"}, {Name: "b"}},
			statuses: map[string]*runtimeapi.ContainerStatus{"a": exited(0, 0)}, synced: []string{"a", "b"}},
		{name: "all succeeded: initialized", inits: []corev1.Container{{Name: "a"}, {Name: "b"}},
			statuses: map[string]*runtimeapi.ContainerStatus{"a": exited(0, 0), "b": exited(0, 0)}, synced: []string{"a", "b"}, done: true},
		{name: "a failure holds the next, restarted under OnFailure", policy: corev1.RestartPolicyOnFailure, inits: []corev1.Container{{Name: "a"}, {Name: "b"}},
			statuses: map[string]*runtimeapi.ContainerStatus{"a": exited(1, 0)}, synced: []string{"a"}},
		{name: "a failure under Never fails the pod", policy: corev1.RestartPolicyNever, inits: []corev1.Container{{Name: "a"}, {Name: "b"}},
			statuses: map[string]*runtimeapi.ContainerStatus{"a": exited(1, 0)}, synced: []string{"a"}, failed: true},
		{name: "a sidecar not started holds the next", inits: []corev1.Container{side, {Name: "b"}},
			statuses: map[string]*runtimeapi.ContainerStatus{"side": running("side")}, synced: []string{"side"}},
		{name: "a started sidecar lets the next run", inits: []corev1.Container{side, {Name: "b"}},
			statuses: map[string]*runtimeapi.ContainerStatus{"side": running("side")}, started: map[string]bool{"side": true}, synced: []string{"side", "b"}},
		{name: "once initialized, only sidecars are synced", initialized: true, inits: []corev1.Container{{Name: "a"}, side},
			synced: []string{"side"}, done: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tc.policy, InitContainers: tc.inits}}
			synced, done, failed := initWalk(pod, tc.initialized, tc.statuses, tc.started)
			if !slices.Equal(synced, tc.synced) || done != tc.done || failed != tc.failed {
				t.Errorf("synced %v done %t failed %t, want %v %t %t", synced, done, failed, tc.synced, tc.done, tc.failed)
			}
		})
	}
	// A regular container created on the sandbox says the init containers ran before.
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}}
	if initRanBefore(pod, map[string]*runtimeapi.Container{"app": {State: runtimeapi.ContainerState_CONTAINER_EXITED}}) {
		t.Error("an exited regular container says init ran")
	}
	if !initRanBefore(pod, map[string]*runtimeapi.Container{"app": {State: runtimeapi.ContainerState_CONTAINER_RUNNING}}) {
		t.Error("a running regular container does not say init ran")
	}
}

// A pod is terminal once every regular container exited for good under its restart policy.
func TestPodFinished(t *testing.T) {
	none := func(string) bool { return false }
	for _, tc := range []struct {
		name      string
		policy    corev1.RestartPolicy
		statuses  map[string]*runtimeapi.ContainerStatus
		condemned func(string) bool
		want      corev1.PodPhase
	}{
		{name: "Always never finishes", policy: corev1.RestartPolicyAlways, statuses: map[string]*runtimeapi.ContainerStatus{"a": exited(0, 0), "b": exited(0, 0)}},
		{name: "the default policy is Always", statuses: map[string]*runtimeapi.ContainerStatus{"a": exited(0, 0), "b": exited(0, 0)}},
		{name: "Never, all succeeded", policy: corev1.RestartPolicyNever, statuses: map[string]*runtimeapi.ContainerStatus{"a": exited(0, 0), "b": exited(0, 0)}, want: corev1.PodSucceeded},
		{name: "Never, one failed", policy: corev1.RestartPolicyNever, statuses: map[string]*runtimeapi.ContainerStatus{"a": exited(0, 0), "b": exited(2, 0)}, want: corev1.PodFailed},
		{name: "OnFailure, all succeeded", policy: corev1.RestartPolicyOnFailure, statuses: map[string]*runtimeapi.ContainerStatus{"a": exited(0, 0), "b": exited(0, 0)}, want: corev1.PodSucceeded},
		{name: "OnFailure, one failed: it restarts", policy: corev1.RestartPolicyOnFailure, statuses: map[string]*runtimeapi.ContainerStatus{"a": exited(0, 0), "b": exited(1, 0)}},
		{name: "one still runs", policy: corev1.RestartPolicyNever, statuses: map[string]*runtimeapi.ContainerStatus{"a": exited(0, 0), "b": running("b")}},
		{name: "one not yet started", policy: corev1.RestartPolicyNever, statuses: map[string]*runtimeapi.ContainerStatus{"a": exited(0, 0)}},
		{name: "one exited while condemned by its probe, or restarting for a new definition", policy: corev1.RestartPolicyNever, statuses: map[string]*runtimeapi.ContainerStatus{"a": exited(0, 0), "b": exited(1, 0)},
			condemned: func(name string) bool { return name == "b" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: tc.policy, Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}}
			condemned := tc.condemned
			if condemned == nil {
				condemned = none
			}
			if got := podFinished(pod, tc.statuses, condemned); got != tc.want {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
	if got := podFinished(&corev1.Pod{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}}, nil, none); got != "" {
		t.Errorf("a pod without containers finished %q", got)
	}
}

// The grace period of a kill: the deletion's, else a failed probe's own, else the pod's, else 30s.
func TestKillGrace(t *testing.T) {
	c := &corev1.Container{Name: "c", LivenessProbe: &corev1.Probe{TerminationGracePeriodSeconds: ptr.To[int64](5)}}
	for _, tc := range []struct {
		name           string
		deletion, spec *int64
		why            prober.Type
		want           int64
	}{
		{name: "the default", why: prober.None, want: 30},
		{name: "the pod's", spec: ptr.To[int64](60), why: prober.None, want: 60},
		{name: "the failed probe's", spec: ptr.To[int64](60), why: prober.Liveness, want: 5},
		{name: "a probe without one: the pod's", spec: ptr.To[int64](60), why: prober.Startup, want: 60},
		{name: "the deletion's above all", deletion: ptr.To[int64](0), spec: ptr.To[int64](60), why: prober.Liveness, want: 0},
	} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionGracePeriodSeconds: tc.deletion}, Spec: corev1.PodSpec{TerminationGracePeriodSeconds: tc.spec}}
		if got := killGrace(pod, c, tc.why); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// An orphan (a pod known only by the runtime's labels) stops with the grace recorded on the
// container; a pod with a spec, with its own.
func TestOrphanGrace(t *testing.T) {
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gone", UID: "u"}}
	known := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}, TerminationGracePeriodSeconds: ptr.To[int64](60)}}
	recorded := func(v string) *runtimeapi.Container {
		return &runtimeapi.Container{Annotations: map[string]string{labels.PodTerminationGracePeriod: v}}
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		c    *runtimeapi.Container
		want int64
	}{
		{"an orphan, its recorded grace", orphan, recorded("2"), 2},
		{"an orphan, none recorded (made by an older agent): the default", orphan, &runtimeapi.Container{}, 30},
		{"an orphan, a recorded grace not a number: the default", orphan, recorded("two"), 30},
		{"a known pod: its own, whatever is recorded", known, recorded("2"), 60},
	} {
		if got := orphanGrace(tc.pod, tc.c); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// Regular containers stop first, then the sidecars in reverse order of the spec.
func TestTerminationOrder(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{InitContainers: []corev1.Container{{Name: "s1"}, {Name: "s2"}}, Containers: []corev1.Container{{Name: "b"}, {Name: "a"}}}}
	var ctrs []*runtimeapi.Container
	for _, name := range []string{"s1", "a", "s2", "b"} {
		ctrs = append(ctrs, &runtimeapi.Container{Id: name, Metadata: &runtimeapi.ContainerMetadata{Name: name}, Labels: map[string]string{labels.ContainerName: name}})
	}
	sortContainers(ctrs)
	var got []string
	for _, c := range terminationOrder(pod, ctrs) {
		got = append(got, c.Id)
	}
	if want := []string{"a", "b", "s2", "s1"}; !slices.Equal(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
}
