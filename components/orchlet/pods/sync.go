package pods

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"orch.io/orch/components/orchlet/events"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/pods/backoff"
	"orch.io/orch/components/orchlet/pods/images"
	"orch.io/orch/components/orchlet/pods/labels"
	"orch.io/orch/components/orchlet/pods/prober"
)

// Event reasons, as Kubernetes' kubelet records them.
const (
	ReasonCreated      = "Created"
	ReasonStarted      = "Started"
	ReasonKilling      = "Killing"
	ReasonBackOff      = "BackOff"
	ReasonFailed       = "Failed"
	ReasonFailedSync   = "FailedSync"
	waitCrashLoop      = "CrashLoopBackOff"
	waitCreateError    = "CreateContainerError"
	waitRunError       = "RunContainerError"
	defaultGracePeriod = 30
)

// sync makes the runtime match one pod, and retries with back-off when the runtime fails it.
func (m *Manager) sync(ctx context.Context, p *podState) {
	if p.rejected != "" {
		return
	}
	if until, wait := p.syncErr.WaitSince(p.syncErr.Last, m.clk.Now()); wait {
		// A relist or resync does not cut short the back-off after a failed sync.
		m.enqueue(p.syncKey(), until)
		return
	}
	var err error
	switch {
	case p.removed:
		err = m.teardown(ctx, p)
	case p.evicted != nil:
		err = m.killEvicted(ctx, p)
	default:
		m.volumes.Refresh(ctx, p.volumes())
		err = m.syncPod(ctx, p)
	}
	now := m.clk.Now()
	if err != nil {
		p.syncErr.Next(now, now)
		m.log.Error(err, "Syncing pod failed; will retry", "pod", klog.KObj(p.pod), "retryIn", p.syncErr.Delay)
		m.rec.Eventf(events.PodReference(p.pod), corev1.EventTypeWarning, ReasonFailedSync, "Sync", "Error syncing pod, retrying in %v: %v", p.syncErr.Delay, err)
		m.enqueue(p.syncKey(), now.Add(p.syncErr.Delay))
		return
	}
	p.syncErr = backoff.Backoff{}
}

func (m *Manager) listPod(ctx context.Context, uid types.UID) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container, error) {
	var sbs []*runtimeapi.PodSandbox
	var ctrs []*runtimeapi.Container
	if err := m.calls.Request(ctx, func(ctx context.Context) (err error) {
		sbs, err = m.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: labels.UIDSelector(string(uid))})
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("listing sandboxes: %w", err)
	}
	if err := m.calls.Request(ctx, func(ctx context.Context) (err error) {
		ctrs, err = m.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: labels.UIDSelector(string(uid))})
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("listing containers: %w", err)
	}
	return sbs, ctrs, nil
}

// gracePeriod is the deletion's when the API server gave one, else the spec's.
func (m *Manager) gracePeriod(pod *corev1.Pod) int64 {
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		return *g
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return *g
	}
	return defaultGracePeriod
}

// stopContainer stops c within the pod's grace period; the request may take the runtime timeout on
// top of it, as Kubernetes' CRI client allows.
func (m *Manager) stopContainer(ctx context.Context, pod *corev1.Pod, id string) error {
	grace := m.gracePeriod(pod)
	return m.calls.Within(ctx, m.timeout+time.Duration(grace)*time.Second, func(ctx context.Context) error {
		return m.rt.StopContainer(ctx, id, grace)
	})
}

// stopRunning kills the pod's running containers in Kubernetes' termination order: the regular
// containers first (side by side: each one's preStop sleep runs while the others stop), then the
// sidecars one at a time in reverse order of the spec. It reports false while a preStop sleep
// still runs; the pod's sync is queued for its end.
func (m *Manager) stopRunning(ctx context.Context, p *podState, ctrs []*runtimeapi.Container) (bool, error) {
	done := true
	for _, c := range terminationOrder(p.pod, ctrs) {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		name := c.Labels[labels.ContainerName]
		spec, isInit := p.container(name)
		if isInit && !done {
			break // sidecars stop after the regular containers, and after each other
		}
		stopped, err := m.killContainer(ctx, p, name, spec, c.Id, fmt.Sprintf("Stopping container %s", name), m.gracePeriod(p.pod))
		if err != nil {
			return false, fmt.Errorf("stopping container %s: %w", name, err)
		}
		done = done && stopped
	}
	return done, nil
}

// teardown stops the pod's running containers and sandboxes, then removes them.
func (m *Manager) teardown(ctx context.Context, p *podState) error {
	sbs, ctrs, err := m.listPod(ctx, p.pod.UID)
	if err != nil {
		return err
	}
	sortContainers(ctrs)
	if done, err := m.stopRunning(ctx, p, ctrs); !done || err != nil {
		return err
	}
	for _, s := range sbs {
		if err := m.calls.Request(ctx, func(ctx context.Context) error { return m.rt.StopPodSandbox(ctx, s.Id) }); err != nil {
			return fmt.Errorf("stopping sandbox %s: %w", s.Id, err)
		}
	}
	for _, c := range ctrs {
		if err := m.calls.Request(ctx, func(ctx context.Context) error { return m.rt.RemoveContainer(ctx, c.Id) }); err != nil {
			return fmt.Errorf("removing container %s: %w", c.Id, err)
		}
	}
	for _, s := range sbs {
		if err := m.calls.Request(ctx, func(ctx context.Context) error { return m.rt.RemovePodSandbox(ctx, s.Id) }); err != nil {
			return fmt.Errorf("removing sandbox %s: %w", s.Id, err)
		}
	}
	if err := m.cleanupPod(p.pod); err != nil {
		return err
	}
	for name := range p.ctrs {
		for _, t := range prober.Types {
			m.dequeue(p.probeKey(name, t))
		}
	}
	p.gone = true
	m.log.Info("Pod torn down", "pod", klog.KObj(p.pod))
	return nil
}

// reap forgets the pod uid once its teardown finished. It runs after the pod's item, where no
// worker holds the pod: only the loop that hands out the items changes the pods map.
func (m *Manager) reap(uid types.UID) {
	p := m.pods[uid]
	if p == nil || !p.gone {
		return
	}
	m.shared.Lock()
	delete(m.pods, uid)
	m.touched[uid] = true // published as stopped
	m.shared.Unlock()
	m.images.Forget(uid)
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

// instances is what a sync knows of the pod's containers on its ready sandbox: the latest instance
// of each name, the attempt each name's next instance takes, and the statuses fetched so far.
type instances struct {
	latest   map[string]*runtimeapi.Container
	next     map[string]uint32
	statuses map[string]*runtimeapi.ContainerStatus
	sbCfg    *runtimeapi.PodSandboxConfig
	changed  bool // a container was started or killed: look again at once
}

// syncPod brings up the sandbox, then the init containers one at a time and the regular containers
// in spec order, restarting exited ones as the restart policy and the crash-loop back-off allow, as
// Kubernetes' computePodActions decides. A pod that is done (every regular container exited for
// good, an init container failed under restartPolicy Never, or activeDeadlineSeconds passed) is
// terminal: its containers and sandbox are stopped and nothing starts again.
func (m *Manager) syncPod(ctx context.Context, p *podState) error {
	pod := p.pod
	sbs, ctrs, err := m.listPod(ctx, pod.UID)
	if err != nil {
		return err
	}
	if p.terminal == "" && m.deadlineExceeded(p) {
		p.terminal, p.reason, p.msg = corev1.PodFailed, ReasonDeadlineExceeded, "Pod was active on the node longer than the specified deadline"
		m.rec.Eventf(events.PodReference(pod), corev1.EventTypeNormal, ReasonDeadlineExceeded, "Sync", "%s", p.msg)
	}
	if p.terminal != "" {
		return m.killPod(ctx, p, sbs, ctrs)
	}
	m.checkDeadline(p)
	if err := m.volumes.MakePodDataDirs(pod); err != nil {
		m.rec.Eventf(events.PodReference(pod), corev1.EventTypeWarning, ReasonFailed, "Sync", "error making pod data directories: %v", err)
		return err
	}
	var ready *runtimeapi.PodSandbox
	var attempt uint32
	for _, s := range sbs {
		if a := s.Metadata.GetAttempt(); a >= attempt {
			attempt = a + 1
		}
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY && (ready == nil || s.Metadata.GetAttempt() > ready.Metadata.GetAttempt()) {
			ready = s
		}
	}
	if ready == nil {
		if err := m.killStale(ctx, p, sbs, ctrs); err != nil {
			return err
		}
		// Until a sandbox runs, the pod is Pending with its containers ContainerCreating, as the
		// kubelet shows it, also while sandbox creation keeps failing.
		// A new sandbox runs the init containers again from the first, as the kubelet's does.
		p.sandboxReady, p.initialized = false, false
		m.setStatus(p, nil)
		return m.runSandbox(ctx, p, attempt)
	}
	p.sandboxReady = true
	if p.sandboxID != ready.Id {
		p.sandboxID = ready.Id
		if err := m.readPodIP(ctx, p); err != nil {
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
	in.sbCfg = m.sandboxConfig(pod, ready.Metadata.GetAttempt())
	initialized, err := m.syncInit(ctx, p, in)
	if err != nil {
		return err
	}
	if initialized && p.terminal == "" {
		p.initialized = true
		policy := pod.Spec.RestartPolicy
		if policy == "" {
			policy = corev1.RestartPolicyAlways
		}
		for i := range pod.Spec.Containers {
			if err := m.syncContainer(ctx, p, in, &pod.Spec.Containers[i], policy); err != nil {
				// Published with the failure: the reason a container waits (a configmap not
				// found) shows while the syncs that keep failing back off.
				m.setStatus(p, in.statuses)
				return err
			}
		}
		p.terminal = m.finished(p, in)
	}
	if p.terminal != "" {
		// The regular containers' last statuses: the pod's phase is read from them.
		p.lastStatuses = in.statuses
		return m.killPod(ctx, p, sbs, ctrs)
	}
	m.setStatus(p, in.statuses)
	if in.changed {
		// Look again at once, so an instant crash is seen at the time it happened.
		m.enqueue(p.syncKey(), m.clk.Now())
	}
	return nil
}

// finished is the terminal phase of a pod whose regular containers all exited and none will be
// restarted (restartPolicy Never, or OnFailure with every exit 0); "" while it is not done.
func (m *Manager) finished(p *podState, in *instances) corev1.PodPhase {
	policy := p.pod.Spec.RestartPolicy
	if policy == "" || policy == corev1.RestartPolicyAlways || len(p.pod.Spec.Containers) == 0 {
		return ""
	}
	phase := corev1.PodSucceeded
	for _, c := range p.pod.Spec.Containers {
		st := in.statuses[c.Name]
		if st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || p.ctr(c.Name).Kill != prober.None {
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

// killPod stops what still runs of a terminal pod, containers in termination order then the
// sandbox, as the kubelet's KillPod, and shows its final status.
func (m *Manager) killPod(ctx context.Context, p *podState, sbs []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) error {
	sortContainers(ctrs)
	if done, err := m.stopRunning(ctx, p, ctrs); !done || err != nil {
		m.setStatus(p, p.lastStatuses)
		return err
	}
	for _, s := range sbs {
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			if err := m.calls.Request(ctx, func(ctx context.Context) error { return m.rt.StopPodSandbox(ctx, s.Id) }); err != nil {
				return fmt.Errorf("stopping sandbox: %w", err)
			}
		}
	}
	for name, cs := range p.ctrs {
		m.unwatch(p, name, cs)
	}
	// What was running is shown as it exited.
	for _, name := range slices.Sorted(maps.Keys(p.lastStatuses)) {
		st := p.lastStatuses[name]
		if st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if err := m.calls.Request(ctx, func(ctx context.Context) error {
			resp, err := m.rt.ContainerStatus(ctx, st.Id, false)
			if err == nil {
				p.lastStatuses[name] = resp.GetStatus()
			}
			return err
		}); err != nil {
			return fmt.Errorf("status of container %s: %w", name, err)
		}
	}
	p.sandboxReady = false
	m.setStatus(p, p.lastStatuses)
	return nil
}

// syncInit runs the init containers as Kubernetes' computeInitContainerActions does: one at a
// time in spec order, each to success before the next; a sidecar (restartPolicy Always) is done
// once it has started (its startup probe passed) and is kept running from then on. A failed init
// container is restarted with back-off, unless the pod's restartPolicy is Never: then the pod
// fails. It reports whether every init container is done.
func (m *Manager) syncInit(ctx context.Context, p *podState, in *instances) (bool, error) {
	pod := p.pod
	initialized := p.initialized
	for _, c := range pod.Spec.Containers {
		if l := in.latest[c.Name]; l != nil && l.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			initialized = true // a regular container was created: init ran before
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if sidecar(c) {
			if err := m.syncContainer(ctx, p, in, c, corev1.RestartPolicyAlways); err != nil {
				return false, err
			}
			if !initialized && !p.ctr(c.Name).Started(c) {
				return false, nil
			}
			continue
		}
		l := in.latest[c.Name]
		if initialized {
			// Done before: only its status is shown.
			if l != nil {
				if _, err := m.status(ctx, in, c.Name, l); err != nil {
					return false, err
				}
			}
			continue
		}
		policy := corev1.RestartPolicyOnFailure
		if pod.Spec.RestartPolicy == corev1.RestartPolicyNever {
			policy = corev1.RestartPolicyNever
		}
		if err := m.syncContainer(ctx, p, in, c, policy); err != nil {
			return false, err
		}
		st := in.statuses[c.Name]
		if st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
			return false, nil
		}
		if st.ExitCode != 0 {
			if policy == corev1.RestartPolicyNever {
				p.terminal = corev1.PodFailed
			}
			return false, nil
		}
	}
	return true, nil
}

// status fetches the runtime status of l, the latest instance of name.
func (m *Manager) status(ctx context.Context, in *instances, name string, l *runtimeapi.Container) (*runtimeapi.ContainerStatus, error) {
	var st *runtimeapi.ContainerStatus
	if err := m.calls.Request(ctx, func(ctx context.Context) error {
		resp, err := m.rt.ContainerStatus(ctx, l.Id, false)
		if err == nil {
			st = resp.GetStatus()
		}
		return err
	}); err != nil {
		return nil, fmt.Errorf("status of container %s: %w", name, err)
	}
	in.statuses[name] = st
	return st, nil
}

// syncContainer brings one container to what policy asks: started when it never ran, probed while
// it runs (killed when its liveness or startup probe failed), restarted when it exited and policy
// and back-off allow.
func (m *Manager) syncContainer(ctx context.Context, p *podState, in *instances, c *corev1.Container, policy corev1.RestartPolicy) error {
	pod := p.pod
	cs := p.ctr(c.Name)
	l := in.latest[c.Name]
	if l == nil {
		started, err := m.startContainer(ctx, p, in.sbCfg, c, in.next[c.Name])
		in.changed = in.changed || started
		return err
	}
	st, err := m.status(ctx, in, c.Name, l)
	if err != nil {
		return err
	}
	if st.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING && cs.Kill != prober.None && cs.ProbedID == l.Id {
		stopped, err := m.killContainer(ctx, p, c.Name, c, l.Id, cs.KillNote, m.killGrace(pod, c, cs.Kill))
		if err != nil {
			return fmt.Errorf("killing unhealthy container %s: %w", c.Name, err)
		}
		if stopped {
			cs.Kill = prober.None
			in.changed = true // the next sync, due now, sees it exited and restarts it
		}
		return nil
	}
	switch st.GetState() {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		cs.waiting = nil
		m.watch(p, c, cs, l.Id, st)
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		if err := m.start(ctx, p, c, cs, l.Id); err != nil {
			return err
		}
		in.changed = true
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		m.unwatch(p, c.Name, cs)
		started, err := m.restart(ctx, p, in.sbCfg, c, cs, l, st, policy)
		in.changed = in.changed || started
		return err
	}
	return nil
}

// killStale stops what is left of a pod whose sandbox is gone or not ready, so a new one can start.
func (m *Manager) killStale(ctx context.Context, p *podState, sbs []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) error {
	sortContainers(ctrs)
	for _, c := range ctrs {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			if err := m.stopContainer(ctx, p.pod, c.Id); err != nil {
				return fmt.Errorf("stopping container %s: %w", c.Metadata.GetName(), err)
			}
		}
	}
	for _, s := range sbs {
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			if err := m.calls.Request(ctx, func(ctx context.Context) error { return m.rt.StopPodSandbox(ctx, s.Id) }); err != nil {
				return fmt.Errorf("stopping sandbox: %w", err)
			}
		}
	}
	return nil
}

func (m *Manager) runSandbox(ctx context.Context, p *podState, attempt uint32) error {
	if err := m.preparePod(ctx, p); err != nil {
		return err
	}
	cfg := m.sandboxConfig(p.pod, attempt)
	var id string
	if err := m.calls.Request(ctx, func(ctx context.Context) (err error) {
		id, err = m.rt.RunPodSandbox(ctx, cfg, "")
		return err
	}); err != nil {
		m.rec.Eventf(events.PodReference(p.pod), corev1.EventTypeWarning, "FailedCreatePodSandBox", "CreatePodSandbox", "Failed to create pod sandbox: %v", err)
		return fmt.Errorf("running sandbox: %w", err)
	}
	p.sandboxID = id
	if err := m.readPodIP(ctx, p); err != nil {
		return err
	}
	// The containers come up in the next sync, due now, which sees the sandbox ready.
	m.enqueue(p.syncKey(), m.clk.Now())
	return nil
}

func (m *Manager) readPodIP(ctx context.Context, p *podState) error {
	return m.calls.Request(ctx, func(ctx context.Context) error {
		resp, err := m.rt.PodSandboxStatus(ctx, p.sandboxID, false)
		if err != nil {
			return fmt.Errorf("sandbox status: %w", err)
		}
		p.podIP = resp.GetStatus().GetNetwork().GetIp()
		return nil
	})
}

// restart decides what an exited container needs: nothing when the restart policy keeps it down,
// a wait while its crash-loop back-off runs, otherwise a new instance.
func (m *Manager) restart(ctx context.Context, p *podState, sbCfg *runtimeapi.PodSandboxConfig, c *corev1.Container, cs *ctrState, l *runtimeapi.Container, st *runtimeapi.ContainerStatus, policy corev1.RestartPolicy) (bool, error) {
	pod := p.pod
	if policy == corev1.RestartPolicyNever || (policy == corev1.RestartPolicyOnFailure && st.ExitCode == 0) {
		cs.waiting = nil
		return false, nil
	}
	now := m.clk.Now()
	finished := time.Unix(0, st.FinishedAt)
	cs.lastTerm = m.statusGen.Terminated(c, st, m.relister.ContainerID(l.Id))
	if until, wait := cs.crash.WaitSince(finished, now); wait {
		msg := fmt.Sprintf("back-off %v restarting failed container=%s pod=%s_%s(%s)", cs.crash.Delay, c.Name, pod.Name, pod.Namespace, pod.UID)
		cs.waiting = &corev1.ContainerStateWaiting{Reason: waitCrashLoop, Message: msg}
		m.rec.Eventf(events.ContainerReference(pod, c.Name), corev1.EventTypeWarning, ReasonBackOff, "Restarting", "Back-off restarting failed container %s in pod %s_%s(%s)", c.Name, pod.Name, pod.Namespace, pod.UID)
		m.enqueue(p.syncKey(), until)
		return false, nil
	}
	cs.crash.Next(finished, now)
	return m.startContainer(ctx, p, sbCfg, c, l.Metadata.GetAttempt()+1)
}

// startContainer pulls the image as the pull policy says, then creates and starts attempt number
// attempt of c. It reports whether a container started; a wait for an image is not an error.
func (m *Manager) startContainer(ctx context.Context, p *podState, sbCfg *runtimeapi.PodSandboxConfig, c *corev1.Container, attempt uint32) (bool, error) {
	pod := p.pod
	cs := p.ctr(c.Name)
	if m.clk.Now().Before(p.holdUntil) {
		m.enqueue(p.syncKey(), p.holdUntil) // a postStart sleep runs: look again at its end
		return false, nil
	}
	img := m.images.Ensure(ctx, pod, images.Container(pod, c, &cs.pull), sbCfg)
	if img.OK {
		if vols := m.images.EnsureVolumes(ctx, pod, c, &p.imageVolumes, sbCfg); !vols.OK {
			img = vols
		}
	}
	if !img.OK {
		cs.waiting = img.Waiting
		if !img.RetryAt.IsZero() {
			m.enqueue(p.syncKey(), img.RetryAt)
		}
		return false, nil
	}
	ref := img.Ref
	cfg, err := m.containerConfig(ctx, p, c, ref, attempt)
	if err != nil {
		return false, m.createFailed(p, c, err)
	}
	if err := m.assignCPUs(pod, c, cfg); err != nil {
		cs.waiting = &corev1.ContainerStateWaiting{Reason: waitCreateError, Message: err.Error()}
		m.rec.Eventf(events.ContainerReference(pod, c.Name), corev1.EventTypeWarning, ReasonFailed, "Create", "Error: %v", err)
		return false, fmt.Errorf("creating container %s: %w", c.Name, err)
	}
	var id string
	if err := m.calls.Request(ctx, func(ctx context.Context) (err error) {
		id, err = m.rt.CreateContainer(ctx, p.sandboxID, cfg, sbCfg)
		return err
	}); err != nil {
		cs.waiting = &corev1.ContainerStateWaiting{Reason: waitCreateError, Message: err.Error()}
		m.rec.Eventf(events.ContainerReference(pod, c.Name), corev1.EventTypeWarning, ReasonFailed, "Create", "Error: %v", err)
		return false, fmt.Errorf("creating container %s: %w", c.Name, err)
	}
	m.rec.Eventf(events.ContainerReference(pod, c.Name), corev1.EventTypeNormal, ReasonCreated, "Create", "Created container: %s", c.Name)
	if err := m.start(ctx, p, c, cs, id); err != nil {
		return false, err
	}
	return true, nil
}

func (m *Manager) start(ctx context.Context, p *podState, c *corev1.Container, cs *ctrState, id string) error {
	if err := m.calls.Request(ctx, func(ctx context.Context) error { return m.rt.StartContainer(ctx, id) }); err != nil {
		cs.waiting = &corev1.ContainerStateWaiting{Reason: waitRunError, Message: err.Error()}
		m.rec.Eventf(events.ContainerReference(p.pod, c.Name), corev1.EventTypeWarning, ReasonFailed, "Start", "Error: %v", err)
		return fmt.Errorf("starting container %s: %w", c.Name, err)
	}
	cs.waiting = nil
	m.rec.Eventf(events.ContainerReference(p.pod, c.Name), corev1.EventTypeNormal, ReasonStarted, "Start", "Started container %s", c.Name)
	return m.postStart(ctx, p, c, cs, id)
}
