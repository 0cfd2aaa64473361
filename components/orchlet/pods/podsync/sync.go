package podsync

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/pods/backoff"
	"orch.io/orch/components/orchlet/pods/images"
	"orch.io/orch/components/orchlet/pods/labels"
	"orch.io/orch/components/orchlet/pods/prober"
)

// Event reasons, as Kubernetes' kubelet records them.
const (
	ReasonCreated   = "Created"
	ReasonStarted   = "Started"
	ReasonKilling   = "Killing"
	ReasonBackOff   = "BackOff"
	ReasonFailed    = "Failed"
	waitCrashLoop   = "CrashLoopBackOff"
	waitCreateError = "CreateContainerError"
	waitRunError    = "RunContainerError"
)

func (s *Syncer) listPod(ctx context.Context, uid types.UID) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container, error) {
	var sbs []*runtimeapi.PodSandbox
	var ctrs []*runtimeapi.Container
	if err := s.calls.Request(ctx, func(ctx context.Context) (err error) {
		sbs, err = s.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: labels.UIDSelector(string(uid))})
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("listing sandboxes: %w", err)
	}
	if err := s.calls.Request(ctx, func(ctx context.Context) (err error) {
		ctrs, err = s.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: labels.UIDSelector(string(uid))})
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("listing containers: %w", err)
	}
	return sbs, ctrs, nil
}

// stopContainer stops c within the pod's grace period; the request may take the runtime timeout on
// top of it, as Kubernetes' CRI client allows.
func (s *Syncer) stopContainer(ctx context.Context, p *PodState, id string) error {
	grace := gracePeriod(p.Pod)
	p.changedRuntime = true
	return s.calls.Within(ctx, s.timeout+time.Duration(grace)*time.Second, func(ctx context.Context) error {
		return s.rt.StopContainer(ctx, id, grace)
	})
}

// stopRunning kills the pod's running containers in Kubernetes' termination order: the regular
// containers first (side by side: each one's preStop sleep runs while the others stop), then the
// sidecars one at a time in reverse order of the spec. It reports false while a preStop sleep
// still runs; the pod's sync is queued for its end.
func (s *Syncer) stopRunning(ctx context.Context, p *PodState, ctrs []*runtimeapi.Container) (bool, error) {
	done := true
	for _, c := range terminationOrder(p.Pod, ctrs) {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		name := c.Labels[labels.ContainerName]
		spec, isInit := p.container(name)
		if isInit && !done {
			break // sidecars stop after the regular containers, and after each other
		}
		stopped, err := s.killContainer(ctx, p, name, spec, c.Id, fmt.Sprintf("Stopping container %s", name), orphanGrace(p.Pod, c))
		if err != nil {
			return false, fmt.Errorf("stopping container %s: %w", name, err)
		}
		done = done && stopped
	}
	return done, nil
}

// teardown stops the pod's running containers and sandboxes, then removes them. Once nothing of the
// pod runs, a removal the runtime refuses does not hold the pod: as the kubelet's termination,
// which only stops them, the pod is done when nothing can run and its volumes and cgroup are gone,
// and the container GC removes what is left of a pod the agent no longer has. (containerd 1.6
// refuses to remove an exited container whose task a cancelled StartContainer stranded: its
// deleted pod stayed in the API until the agent restarted.)
func (s *Syncer) teardown(ctx context.Context, p *PodState) error {
	sbs, ctrs, err := s.listPod(ctx, p.Pod.UID)
	if err != nil {
		return err
	}
	sortContainers(ctrs)
	if done, err := s.stopRunning(ctx, p, ctrs); !done || err != nil {
		return err
	}
	for _, sb := range sbs {
		if err := s.calls.Request(ctx, func(ctx context.Context) error { return s.rt.StopPodSandbox(ctx, sb.Id) }); err != nil {
			return fmt.Errorf("stopping sandbox %s: %w", sb.Id, err)
		}
	}
	for _, c := range ctrs {
		if err := s.calls.Request(ctx, func(ctx context.Context) error { return s.rt.RemoveContainer(ctx, c.Id) }); err != nil {
			s.log.Error(err, "Removing a stopped container failed; the container GC will remove it", "pod", klog.KObj(p.Pod), "containerID", c.Id)
		}
	}
	for _, sb := range sbs {
		if err := s.calls.Request(ctx, func(ctx context.Context) error { return s.rt.RemovePodSandbox(ctx, sb.Id) }); err != nil {
			s.log.Error(err, "Removing a stopped sandbox failed; the container GC will remove it", "pod", klog.KObj(p.Pod), "podSandboxID", sb.Id)
		}
	}
	if err := s.cleanupPod(p.Pod); err != nil {
		return err
	}
	for name := range p.ctrs {
		for _, t := range prober.Types {
			s.queue.Unprobe(p.Pod, name, t)
		}
	}
	p.Gone = true
	s.log.Info("Pod torn down", "pod", klog.KObj(p.Pod))
	return nil
}

// instances is what a sync knows of the pod's containers on its ready sandbox: the latest instance
// of each name, the attempt each name's next instance takes, and the statuses fetched so far.
type instances struct {
	latest   map[string]*runtimeapi.Container
	next     map[string]uint32
	statuses map[string]*runtimeapi.ContainerStatus
	// sbCfg is the ready sandbox's config, made by makeSbCfg when a container first starts: most
	// syncs start none.
	sbCfg     *runtimeapi.PodSandboxConfig
	makeSbCfg func() *runtimeapi.PodSandboxConfig
	changed   bool // a container was started or killed: look again at once
	// renewed are the containers restarted this sync for a new definition: their exit is not the
	// pod's last word.
	renewed map[string]bool
}

// sandboxConfig is the ready sandbox's config, made the first time the sync needs it.
func (in *instances) sandboxConfig() *runtimeapi.PodSandboxConfig {
	if in.sbCfg == nil {
		in.sbCfg = in.makeSbCfg()
	}
	return in.sbCfg
}

// syncPod brings up the sandbox, then the init containers one at a time and the regular containers
// in spec order, restarting exited ones as the restart policy and the crash-loop back-off allow, as
// Kubernetes' computePodActions decides. A pod that is done (every regular container exited for
// good, an init container failed under restartPolicy Never, or activeDeadlineSeconds passed) is
// terminal: its containers and sandbox are stopped and nothing starts again.
func (s *Syncer) syncPod(ctx context.Context, p *PodState, listed *Listed) error {
	pod := p.Pod
	var sbs []*runtimeapi.PodSandbox
	var ctrs []*runtimeapi.Container
	if listed != nil {
		// Copies: a kill sorts them, and the cache's lists are shared with the relist.
		sbs, ctrs = slices.Clone(listed.Sandboxes), slices.Clone(listed.Containers)
	} else {
		var err error
		if sbs, ctrs, err = s.listPod(ctx, pod.UID); err != nil {
			return err
		}
	}
	a := computePodActions(pod, p.startTime, p.terminal, sbs, s.clk.Now())
	if a.deadlineExceeded {
		p.terminal, p.reason, p.msg = corev1.PodFailed, ReasonDeadlineExceeded, "Pod was active on the node longer than the specified deadline"
		s.rec.Eventf(events.PodReference(pod), corev1.EventTypeNormal, ReasonDeadlineExceeded, "Sync", "%s", p.msg)
	}
	if a.killPod {
		return s.killPod(ctx, p, sbs, ctrs)
	}
	if !a.deadline.IsZero() {
		s.queue.Sync(pod, a.deadline)
	}
	if err := s.volumes.MakePodDataDirs(pod); err != nil {
		s.rec.Eventf(events.PodReference(pod), corev1.EventTypeWarning, ReasonFailed, "Sync", "error making pod data directories: %v", err)
		return err
	}
	if a.createSandbox {
		if err := s.killStale(ctx, p, sbs, ctrs); err != nil {
			return err
		}
		// Until a sandbox runs, the pod is Pending with its containers ContainerCreating, as the
		// kubelet shows it, also while sandbox creation keeps failing.
		// A new sandbox runs the init containers again from the first, as the kubelet's does.
		p.sandboxReady, p.initialized = false, false
		s.setStatus(p, nil)
		return s.runSandbox(ctx, p, a.attempt)
	}
	ready := a.sandbox
	p.sandboxReady = true
	if p.sandboxID != ready.Id {
		p.sandboxID = ready.Id
		if err := s.readPodIP(ctx, p); err != nil {
			return err
		}
	}
	in := &instances{latest: map[string]*runtimeapi.Container{}, next: map[string]uint32{}, statuses: map[string]*runtimeapi.ContainerStatus{}}
	for _, c := range ctrs {
		if a := c.Metadata.GetAttempt() + 1; a > in.next[c.Metadata.GetName()] {
			in.next[c.Metadata.GetName()] = a
		}
		if c.PodSandboxId != ready.Id {
			continue
		}
		name := c.Metadata.GetName()
		if l := in.latest[name]; l == nil || c.Metadata.GetAttempt() > l.Metadata.GetAttempt() {
			in.latest[name] = c
		}
	}
	// A container runs once: an older instance still running (started again while the runtime
	// misreported where the first ran) is stopped, so the latest is the only one.
	for _, c := range ctrs {
		if c.PodSandboxId == ready.Id && c.State == runtimeapi.ContainerState_CONTAINER_RUNNING && in.latest[c.Metadata.GetName()].GetId() != c.Id {
			if err := s.stopContainer(ctx, p, c.Id); err != nil {
				return fmt.Errorf("stopping an older instance of container %s: %w", c.Metadata.GetName(), err)
			}
		}
	}
	// Every sync forms the pod's DNS config, as the kubelet's makes the sandbox config whole (its
	// DNSConfigForming events come from it); the rest waits for a container to start.
	dns := s.dns.PodDNS(pod)
	in.makeSbCfg = func() *runtimeapi.PodSandboxConfig { return s.sandboxConfig(pod, ready.Metadata.GetAttempt(), dns) }
	if p.terminal == "" {
		// As the kubelet's SyncPod: ephemeral containers start even before initialization ends.
		if err := s.syncEphemeral(ctx, p, in); err != nil {
			s.setStatus(p, in.statuses)
			return err
		}
	}
	initialized, err := s.syncInit(ctx, p, in)
	if err != nil {
		return err
	}
	if initialized && p.terminal == "" {
		p.initialized = true
		policy := restartPolicy(pod)
		for i := range pod.Spec.Containers {
			if err := s.syncContainer(ctx, p, in, &pod.Spec.Containers[i], policy); err != nil {
				// Published with the failure: the reason a container waits (a configmap not
				// found) shows while the syncs that keep failing back off.
				s.setStatus(p, in.statuses)
				return err
			}
		}
		p.terminal = podFinished(pod, in.statuses, func(name string) bool { return p.ctr(name).Kill != prober.None || in.renewed[name] })
	}
	if p.terminal != "" {
		// The regular containers' last statuses: the pod's phase is read from them.
		p.lastStatuses = in.statuses
		return s.killPod(ctx, p, sbs, ctrs)
	}
	s.setStatus(p, in.statuses)
	if in.changed {
		// Look again at once, so an instant crash is seen at the time it happened.
		s.queue.Sync(p.Pod, s.clk.Now())
	}
	return nil
}

// killPod stops what still runs of a terminal pod, containers in termination order then the
// sandbox, as the kubelet's KillPod, and shows its final status.
func (s *Syncer) killPod(ctx context.Context, p *PodState, sbs []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) error {
	sortContainers(ctrs)
	if done, err := s.stopRunning(ctx, p, ctrs); !done || err != nil {
		s.setStatus(p, p.lastStatuses)
		return err
	}
	for _, sb := range sbs {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			p.changedRuntime = true
			if err := s.calls.Request(ctx, func(ctx context.Context) error { return s.rt.StopPodSandbox(ctx, sb.Id) }); err != nil {
				return fmt.Errorf("stopping sandbox: %w", err)
			}
		}
	}
	for name, cs := range p.ctrs {
		s.unwatch(p, name, cs)
	}
	// What was running is shown as it exited.
	for _, name := range slices.Sorted(maps.Keys(p.lastStatuses)) {
		st := p.lastStatuses[name]
		if st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if err := s.calls.Request(ctx, func(ctx context.Context) error {
			resp, err := s.rt.ContainerStatus(ctx, st.Id, false)
			if err == nil {
				p.lastStatuses[name] = resp.GetStatus()
			}
			return err
		}); err != nil {
			return fmt.Errorf("status of container %s: %w", name, err)
		}
	}
	p.sandboxReady = false
	s.setStatus(p, p.lastStatuses)
	return nil
}

// syncInit runs the init containers as Kubernetes' computeInitContainerActions does: one at a
// time in spec order, each to success before the next; a sidecar (restartPolicy Always) is done
// once it has started (its startup probe passed) and is kept running from then on. A failed init
// container is restarted with back-off, unless the pod's restartPolicy is Never: then the pod
// fails. It reports whether every init container is done.
func (s *Syncer) syncInit(ctx context.Context, p *PodState, in *instances) (bool, error) {
	pod := p.Pod
	initialized := p.initialized || initRanBefore(pod, in.latest)
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		policy := initPolicy(pod)
		var err error
		switch {
		case sidecar(c):
			policy = corev1.RestartPolicyAlways
			err = s.syncContainer(ctx, p, in, c, policy)
		case initialized:
			// Done before: only its status is shown.
			if l := in.latest[c.Name]; l != nil {
				_, err = s.fetchStatus(ctx, in, c.Name, l)
			}
		default:
			err = s.syncContainer(ctx, p, in, c, policy)
		}
		if err != nil {
			return false, err
		}
		next, failed := initNext(c, initialized, policy, in.statuses[c.Name], sidecar(c) && p.ctr(c.Name).Started(c))
		if failed {
			p.terminal = corev1.PodFailed
		}
		if !next {
			return false, nil
		}
	}
	return true, nil
}

// fetchStatus is the runtime status of l, the latest instance of name: the one a sync read since
// l was listed in its state, or else the runtime's, kept for the syncs after.
func (s *Syncer) fetchStatus(ctx context.Context, in *instances, name string, l *runtimeapi.Container) (*runtimeapi.ContainerStatus, error) {
	if st := s.statuses.Status(l); st != nil {
		in.statuses[name] = st
		return st, nil
	}
	var st *runtimeapi.ContainerStatus
	if err := s.calls.Request(ctx, func(ctx context.Context) error {
		resp, err := s.rt.ContainerStatus(ctx, l.Id, false)
		if err == nil {
			st = resp.GetStatus()
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("status of container %s: %w", name, err)
	}
	s.statuses.KeepStatus(st)
	in.statuses[name] = st
	return st, nil
}

// syncContainer brings one container to what policy asks, as computeContainerAction decides:
// started when it never ran, probed while it runs (killed when its liveness or startup probe
// failed), restarted when it exited and policy and back-off allow.
func (s *Syncer) syncContainer(ctx context.Context, p *PodState, in *instances, c *corev1.Container, policy corev1.RestartPolicy) error {
	pod := p.Pod
	cs := p.ctr(c.Name)
	l := in.latest[c.Name]
	var st *runtimeapi.ContainerStatus
	if l != nil {
		var err error
		if st, err = s.fetchStatus(ctx, in, c.Name, l); err != nil {
			return err
		}
	}
	now := s.clk.Now()
	action, until := computeContainerAction(containerState{latest: l, status: st, policy: policy, probes: &cs.Container, crash: cs.crash,
		image: c.Image, redefined: cs.redefined}, now)
	switch action {
	case startNew:
		started, err := s.startContainer(ctx, p, in.sandboxConfig(), c, in.next[c.Name], "")
		in.changed = in.changed || started
		return err
	case killUnhealthy:
		stopped, err := s.killContainer(ctx, p, c.Name, c, l.Id, cs.KillNote, killGrace(pod, c, cs.Kill))
		if err != nil {
			return fmt.Errorf("killing unhealthy container %s: %w", c.Name, err)
		}
		if stopped {
			cs.Kill = prober.None
			in.changed = true // the next sync, due now, sees it exited and restarts it
		}
	case killRedefined:
		stopped, err := s.killContainer(ctx, p, c.Name, c, l.Id, fmt.Sprintf("Container %s definition changed, will be restarted", c.Name), gracePeriod(pod))
		if err != nil {
			return fmt.Errorf("killing changed container %s: %w", c.Name, err)
		}
		if stopped {
			cs.redefined = true
			in.changed = true // the next sync, due now, sees it exited and starts the new definition
		}
	case keepRunning:
		cs.waiting = nil
		s.watch(p, c, cs, l.Id, st)
	case startCreated:
		if err := s.start(ctx, p, c, cs, l.Id); err != nil {
			return err
		}
		in.changed = true
	case keepExited:
		s.unwatch(p, c.Name, cs)
		cs.waiting = nil
	case backOff:
		s.unwatch(p, c.Name, cs)
		cs.lastTerm = s.statusGen.Terminated(c, st, s.statusGen.ContainerID(l.Id))
		msg := fmt.Sprintf("back-off %v restarting failed container=%s pod=%s_%s(%s)", cs.crash.Delay, c.Name, pod.Name, pod.Namespace, pod.UID)
		cs.waiting = &corev1.ContainerStateWaiting{Reason: waitCrashLoop, Message: msg}
		s.rec.Eventf(events.ContainerReference(pod, c.Name), corev1.EventTypeWarning, ReasonBackOff, "Restarting", "Back-off restarting failed container %s in pod %s_%s(%s)", c.Name, pod.Name, pod.Namespace, pod.UID)
		s.queue.Sync(pod, until)
	case restartExited:
		s.unwatch(p, c.Name, cs)
		cs.lastTerm = s.statusGen.Terminated(c, st, s.statusGen.ContainerID(l.Id))
		if cs.redefined {
			// A new definition starts afresh, as the kubelet keys its back-off by the definition.
			cs.redefined, cs.crash = false, backoff.Backoff{}
			if in.renewed == nil {
				in.renewed = map[string]bool{}
			}
			in.renewed[c.Name] = true
		} else {
			cs.crash.Next(time.Unix(0, st.FinishedAt), now)
		}
		started, err := s.startContainer(ctx, p, in.sandboxConfig(), c, l.Metadata.GetAttempt()+1, "")
		in.changed = in.changed || started
		return err
	}
	return nil
}

// killStale stops what is left of a pod whose sandbox is gone or not ready, so a new one can start.
func (s *Syncer) killStale(ctx context.Context, p *PodState, sbs []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) error {
	sortContainers(ctrs)
	for _, c := range ctrs {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			if err := s.stopContainer(ctx, p, c.Id); err != nil {
				return fmt.Errorf("stopping container %s: %w", c.Metadata.GetName(), err)
			}
		}
	}
	for _, sb := range sbs {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			p.changedRuntime = true
			if err := s.calls.Request(ctx, func(ctx context.Context) error { return s.rt.StopPodSandbox(ctx, sb.Id) }); err != nil {
				return fmt.Errorf("stopping sandbox: %w", err)
			}
		}
	}
	return nil
}

func (s *Syncer) runSandbox(ctx context.Context, p *PodState, attempt uint32) error {
	if err := s.preparePod(ctx, p); err != nil {
		return err
	}
	cfg := s.SandboxConfig(p.Pod, attempt)
	var id string
	p.changedRuntime = true
	if err := s.calls.Request(ctx, func(ctx context.Context) (err error) {
		id, err = s.rt.RunPodSandbox(ctx, cfg, "")
		return err
	}); err != nil {
		s.rec.Eventf(events.PodReference(p.Pod), corev1.EventTypeWarning, "FailedCreatePodSandBox", "CreatePodSandbox", "Failed to create pod sandbox: %v", err)
		return fmt.Errorf("running sandbox: %w", err)
	}
	p.sandboxID = id
	if err := s.readPodIP(ctx, p); err != nil {
		return err
	}
	// The containers come up in the next sync, due now, which sees the sandbox ready.
	s.queue.Sync(p.Pod, s.clk.Now())
	return nil
}

func (s *Syncer) readPodIP(ctx context.Context, p *PodState) error {
	return s.calls.Request(ctx, func(ctx context.Context) error {
		resp, err := s.rt.PodSandboxStatus(ctx, p.sandboxID, false)
		if err != nil {
			return fmt.Errorf("sandbox status: %w", err)
		}
		p.podIP = resp.GetStatus().GetNetwork().GetIp()
		return nil
	})
}

// syncEphemeral starts each ephemeral container that never ran in the pod's running sandbox, in
// the process namespace of its target when it names one, and never restarts one: the kubelet's
// EphemeralContainersToStart. A target not yet created is waited for.
func (s *Syncer) syncEphemeral(ctx context.Context, p *PodState, in *instances) error {
	for i := range p.Pod.Spec.EphemeralContainers {
		ec := &p.Pod.Spec.EphemeralContainers[i]
		c := corev1.Container(ec.EphemeralContainerCommon)
		if l := in.latest[c.Name]; l != nil || in.next[c.Name] > 0 {
			if l != nil {
				if _, err := s.fetchStatus(ctx, in, c.Name, l); err != nil {
					return err
				}
			}
			continue
		}
		var target string
		if t := ec.TargetContainerName; t != "" {
			l := in.latest[t]
			if l == nil {
				p.ctr(c.Name).waiting = &corev1.ContainerStateWaiting{Reason: waitCreateError, Message: fmt.Sprintf("unable to find target container %s", t)}
				continue
			}
			target = l.Id
		}
		started, err := s.startContainer(ctx, p, in.sandboxConfig(), &c, 0, target)
		in.changed = in.changed || started
		if err != nil {
			return err
		}
	}
	return nil
}

// startContainer pulls the image as the pull policy says, then creates and starts attempt number
// attempt of c. It reports whether a container started; a wait for an image is not an error.
// target, when set, is the ID of the container whose process namespace c joins (an ephemeral
// container's target), as the kubelet's NamespaceMode TARGET.
func (s *Syncer) startContainer(ctx context.Context, p *PodState, sbCfg *runtimeapi.PodSandboxConfig, c *corev1.Container, attempt uint32, target string) (bool, error) {
	pod := p.Pod
	cs := p.ctr(c.Name)
	if s.clk.Now().Before(p.holdUntil) {
		s.queue.Sync(p.Pod, p.holdUntil) // a postStart sleep runs: look again at its end
		return false, nil
	}
	img := s.images.Ensure(ctx, pod, images.Container(pod, c, &cs.pull), sbCfg)
	if img.OK {
		if vols := s.images.EnsureVolumes(ctx, pod, c, &p.imageVolumes, sbCfg); !vols.OK {
			img = vols
		}
	}
	if !img.OK {
		cs.waiting = img.Waiting
		if !img.RetryAt.IsZero() {
			s.queue.Sync(p.Pod, img.RetryAt)
		}
		return false, nil
	}
	ref := img.Ref
	cfg, err := s.ContainerConfig(ctx, p, c, ref, attempt)
	if err != nil {
		return false, s.createFailed(p, c, err)
	}
	if ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions(); target != "" && ns != nil && ns.Pid == runtimeapi.NamespaceMode_CONTAINER {
		ns.Pid, ns.TargetId = runtimeapi.NamespaceMode_TARGET, target
	}
	if err := s.assignCPUs(pod, c, cfg); err != nil {
		cs.waiting = &corev1.ContainerStateWaiting{Reason: waitCreateError, Message: err.Error()}
		s.rec.Eventf(events.ContainerReference(pod, c.Name), corev1.EventTypeWarning, ReasonFailed, "Create", "Error: %v", err)
		return false, fmt.Errorf("creating container %s: %w", c.Name, err)
	}
	var id string
	p.changedRuntime = true
	if err := s.calls.Request(ctx, func(ctx context.Context) (err error) {
		id, err = s.rt.CreateContainer(ctx, p.sandboxID, cfg, sbCfg)
		return err
	}); err != nil {
		cs.waiting = &corev1.ContainerStateWaiting{Reason: waitCreateError, Message: err.Error()}
		s.rec.Eventf(events.ContainerReference(pod, c.Name), corev1.EventTypeWarning, ReasonFailed, "Create", "Error: %v", err)
		return false, fmt.Errorf("creating container %s: %w", c.Name, err)
	}
	s.rec.Eventf(events.ContainerReference(pod, c.Name), corev1.EventTypeNormal, ReasonCreated, "Create", "Created container: %s", c.Name)
	if err := s.start(ctx, p, c, cs, id); err != nil {
		return false, err
	}
	return true, nil
}

func (s *Syncer) start(ctx context.Context, p *PodState, c *corev1.Container, cs *ctrState, id string) error {
	p.changedRuntime = true
	if err := s.calls.Request(ctx, func(ctx context.Context) error { return s.rt.StartContainer(ctx, id) }); err != nil {
		cs.waiting = &corev1.ContainerStateWaiting{Reason: waitRunError, Message: err.Error()}
		s.rec.Eventf(events.ContainerReference(p.Pod, c.Name), corev1.EventTypeWarning, ReasonFailed, "Start", "Error: %v", err)
		return fmt.Errorf("starting container %s: %w", c.Name, err)
	}
	cs.waiting = nil
	s.rec.Eventf(events.ContainerReference(p.Pod, c.Name), corev1.EventTypeNormal, ReasonStarted, "Start", "Started container %s", c.Name)
	return s.postStart(ctx, p, c, cs, id)
}
