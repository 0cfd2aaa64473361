package pods

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// Event reasons, as Kubernetes' kubelet records them.
const (
	ReasonPulling      = "Pulling"
	ReasonPulled       = "Pulled"
	ReasonCreated      = "Created"
	ReasonStarted      = "Started"
	ReasonKilling      = "Killing"
	ReasonBackOff      = "BackOff"
	ReasonUnhealthy    = "Unhealthy"
	ReasonFailed       = "Failed"
	ReasonFailedSync   = "FailedSync"
	ReasonNeverPull    = "ErrImageNeverPull"
	waitCreating       = "ContainerCreating"
	waitCrashLoop      = "CrashLoopBackOff"
	waitErrImagePull   = "ErrImagePull"
	waitImageBackOff   = "ImagePullBackOff"
	waitCreateError    = "CreateContainerError"
	waitRunError       = "RunContainerError"
	defaultGracePeriod = 30
)

func podRef(pod *corev1.Pod) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}
}

func containerRef(pod *corev1.Pod, name string) *corev1.ObjectReference {
	r := podRef(pod)
	r.FieldPath = fmt.Sprintf("spec.containers{%s}", name)
	return r
}

// relistRuntime lists the runtime and queues a sync of every pod whose objects changed since the last
// relist, and a teardown of every pod of the agent's that is no longer desired.
func (m *Manager) relistRuntime(ctx context.Context) {
	if m.runtimeName == "" {
		if err := m.request(ctx, func(ctx context.Context) error {
			v, err := m.rt.Version(ctx, "v1")
			m.runtimeName = v.GetRuntimeName()
			return err
		}); err != nil {
			m.log.Error(err, "Asking the runtime its version failed")
			return
		}
	}
	var sbs []*runtimeapi.PodSandbox
	var ctrs []*runtimeapi.Container
	err := m.request(ctx, func(ctx context.Context) (err error) {
		sbs, err = m.rt.ListPodSandbox(ctx, nil)
		return err
	})
	if err == nil {
		err = m.request(ctx, func(ctx context.Context) (err error) {
			ctrs, err = m.rt.ListContainers(ctx, nil)
			return err
		})
	}
	if err != nil {
		m.log.Error(err, "Relisting the runtime failed")
		return
	}
	ready := m.sourcesReady == nil || m.sourcesReady()
	if m.sameAsLastRelist(sbs, ctrs) && !(ready && m.orphansDeferred) {
		return
	}
	m.orphansDeferred = false
	// Each object is compared with the last relist by id: a pod changed when one of its objects
	// is new, changed state or went away. Two maps are reused in turn, so a relist that finds
	// nothing new allocates almost nothing.
	cur := m.relisted
	clear(cur)
	var changed, gone map[types.UID]bool
	mark := func(uid types.UID) {
		if changed == nil {
			changed = map[types.UID]bool{}
		}
		changed[uid] = true
	}
	now := m.clk.Now()
	observe := func(id string, o seenObject, namespace, name string) {
		cur[id] = o
		if m.pods[o.uid] == nil {
			if !ready {
				// Perhaps a source not yet heard from names it: judged once every source has
				// spoken, so a restarted agent adopts its pods rather than killing them.
				m.orphansDeferred = true
				return
			}
			// An orphan: a pod of ours no source names, to tear down.
			p := newPodState(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: o.uid}}, now)
			p.removed = true
			m.pods[o.uid] = p
			mark(o.uid)
			return
		}
		if m.seen[id] != o {
			mark(o.uid)
		}
	}
	for _, s := range sbs {
		if uid := types.UID(s.Labels[LabelPodUID]); uid != "" {
			observe(s.Id, seenObject{uid: uid, sandbox: true, state: int32(s.State)}, s.Labels[LabelPodNamespace], s.Labels[LabelPodName])
		}
	}
	for _, c := range ctrs {
		if uid := types.UID(c.Labels[LabelPodUID]); uid != "" {
			observe(c.Id, seenObject{uid: uid, state: int32(c.State)}, "", "")
		}
	}
	for id, o := range m.seen {
		if _, ok := cur[id]; !ok {
			if gone == nil {
				gone = map[types.UID]bool{}
			}
			gone[o.uid] = true
		}
	}
	if len(gone) > 0 {
		// A pod all of whose objects went away is not synced for it: nothing of it is left to look at.
		for _, o := range cur {
			if gone[o.uid] {
				mark(o.uid)
			}
		}
	}
	for uid := range changed {
		m.enqueue(m.pods[uid].syncKey(), now)
	}
	m.seen, m.relisted = cur, m.seen
}

// sameAsLastRelist reports whether the runtime listed the same objects in the same order and
// states as at the last relist, the usual answer on a quiet node, and otherwise remembers this
// list for the next relist to compare with.
func (m *Manager) sameAsLastRelist(sbs []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) bool {
	same := len(m.lastList) == len(sbs)+len(ctrs)
	for i := 0; same && i < len(sbs); i++ {
		same = m.lastList[i] == listed{id: sbs[i].Id, state: int32(sbs[i].State)}
	}
	for i := 0; same && i < len(ctrs); i++ {
		same = m.lastList[len(sbs)+i] == listed{id: ctrs[i].Id, state: 100 + int32(ctrs[i].State)}
	}
	if same {
		return true
	}
	m.lastList = m.lastList[:0]
	for _, s := range sbs {
		m.lastList = append(m.lastList, listed{id: s.Id, state: int32(s.State)})
	}
	for _, c := range ctrs {
		m.lastList = append(m.lastList, listed{id: c.Id, state: 100 + int32(c.State)})
	}
	return false
}

// listed is one object of a relist, in the order the runtime listed it; containers' states are
// offset by 100 so that no sandbox state equals a container state.
type listed struct {
	id    string
	state int32
}

// seenObject is what a relist remembers of one sandbox or container.
type seenObject struct {
	uid     types.UID
	sandbox bool
	state   int32
}

// sync makes the runtime match one pod, and retries with back-off when the runtime fails it.
func (m *Manager) sync(ctx context.Context, p *podState) {
	if p.rejected != "" {
		return
	}
	if until, wait := p.syncErr.waitSince(p.syncErr.last, m.clk.Now()); wait {
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
		err = m.syncPod(ctx, p)
	}
	now := m.clk.Now()
	if err != nil {
		p.syncErr.next(now, now)
		m.log.Error(err, "Syncing pod failed; will retry", "pod", klog.KObj(p.pod), "retryIn", p.syncErr.delay)
		m.rec.Eventf(podRef(p.pod), corev1.EventTypeWarning, ReasonFailedSync, "Sync", "Error syncing pod, retrying in %v: %v", p.syncErr.delay, err)
		m.enqueue(p.syncKey(), now.Add(p.syncErr.delay))
		return
	}
	p.syncErr = backoff{}
}

func uidFilter(uid types.UID) map[string]string {
	return map[string]string{LabelPodUID: string(uid)}
}

func (m *Manager) listPod(ctx context.Context, uid types.UID) ([]*runtimeapi.PodSandbox, []*runtimeapi.Container, error) {
	var sbs []*runtimeapi.PodSandbox
	var ctrs []*runtimeapi.Container
	if err := m.request(ctx, func(ctx context.Context) (err error) {
		sbs, err = m.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: uidFilter(uid)})
		return err
	}); err != nil {
		return nil, nil, fmt.Errorf("listing sandboxes: %w", err)
	}
	if err := m.request(ctx, func(ctx context.Context) (err error) {
		ctrs, err = m.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: uidFilter(uid)})
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
	return m.callWithin(ctx, m.timeout+time.Duration(grace)*time.Second, func(ctx context.Context) error {
		return m.rt.StopContainer(ctx, id, grace)
	})
}

// teardown stops the pod's running containers and sandboxes, then removes them.
func (m *Manager) teardown(ctx context.Context, p *podState) error {
	sbs, ctrs, err := m.listPod(ctx, p.pod.UID)
	if err != nil {
		return err
	}
	sortContainers(ctrs)
	for _, c := range ctrs {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		name := c.Labels[LabelContainerName]
		m.rec.Eventf(containerRef(p.pod, name), corev1.EventTypeNormal, ReasonKilling, "Killing", "Stopping container %s", name)
		if err := m.stopContainer(ctx, p.pod, c.Id); err != nil {
			return fmt.Errorf("stopping container %s: %w", name, err)
		}
	}
	for _, s := range sbs {
		if err := m.request(ctx, func(ctx context.Context) error { return m.rt.StopPodSandbox(ctx, s.Id) }); err != nil {
			return fmt.Errorf("stopping sandbox %s: %w", s.Id, err)
		}
	}
	for _, c := range ctrs {
		if err := m.request(ctx, func(ctx context.Context) error { return m.rt.RemoveContainer(ctx, c.Id) }); err != nil {
			return fmt.Errorf("removing container %s: %w", c.Id, err)
		}
	}
	for _, s := range sbs {
		if err := m.request(ctx, func(ctx context.Context) error { return m.rt.RemovePodSandbox(ctx, s.Id) }); err != nil {
			return fmt.Errorf("removing sandbox %s: %w", s.Id, err)
		}
	}
	for name := range p.ctrs {
		delete(m.queue, p.probeKey(name))
	}
	delete(m.pods, p.pod.UID)
	m.touched[p.pod.UID] = true // published as stopped
	for k := range m.pulled {
		if k.uid == p.pod.UID {
			delete(m.pulled, k)
		}
	}
	m.log.Info("Pod torn down", "pod", klog.KObj(p.pod))
	return nil
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

// syncPod brings up the sandbox, then each container in spec order, restarting exited ones as the
// restart policy and the crash-loop back-off allow.
func (m *Manager) syncPod(ctx context.Context, p *podState) error {
	pod := p.pod
	sbs, ctrs, err := m.listPod(ctx, pod.UID)
	if err != nil {
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
		m.setStatus(p, nil)
		return m.runSandbox(ctx, p, attempt)
	}
	if p.sandboxID != ready.Id {
		p.sandboxID = ready.Id
		if err := m.readPodIP(ctx, p); err != nil {
			return err
		}
	}
	latest := map[string]*runtimeapi.Container{}
	next := map[string]uint32{} // the attempt a new instance takes: names are reserved per attempt
	for _, c := range ctrs {
		if a := c.Metadata.GetAttempt() + 1; a > next[c.Metadata.GetName()] {
			next[c.Metadata.GetName()] = a
		}
		if c.PodSandboxId != ready.Id {
			continue
		}
		name := c.Metadata.GetName()
		if l := latest[name]; l == nil || c.Metadata.GetAttempt() > l.Metadata.GetAttempt() {
			latest[name] = c
		}
	}
	sbCfg := m.sandboxConfig(pod, ready.Metadata.GetAttempt())
	statuses := map[string]*runtimeapi.ContainerStatus{}
	changed := false
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := p.ctr(c.Name)
		l := latest[c.Name]
		if l == nil {
			started, err := m.startContainer(ctx, p, sbCfg, c, next[c.Name])
			changed = changed || started
			if err != nil {
				return err
			}
			continue
		}
		var st *runtimeapi.ContainerStatus
		if err := m.request(ctx, func(ctx context.Context) error {
			resp, err := m.rt.ContainerStatus(ctx, l.Id, false)
			if err == nil {
				st = resp.GetStatus()
			}
			return err
		}); err != nil {
			return fmt.Errorf("status of container %s: %w", c.Name, err)
		}
		statuses[c.Name] = st
		if st.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING && cs.kill && cs.probedID == l.Id {
			m.rec.Eventf(containerRef(pod, c.Name), corev1.EventTypeNormal, ReasonKilling, "Killing", "Container %s failed liveness probe, will be restarted", c.Name)
			if err := m.stopContainer(ctx, pod, l.Id); err != nil {
				return fmt.Errorf("killing unhealthy container %s: %w", c.Name, err)
			}
			cs.kill = false
			changed = true
			continue // the next sync, due now, sees it exited and restarts it
		}
		switch st.GetState() {
		case runtimeapi.ContainerState_CONTAINER_RUNNING:
			cs.waiting = nil
			m.watchLiveness(p, c, cs, l.Id, st)
		case runtimeapi.ContainerState_CONTAINER_CREATED:
			if err := m.start(ctx, p, c, cs, l.Id); err != nil {
				return err
			}
			changed = true
		case runtimeapi.ContainerState_CONTAINER_EXITED:
			m.unwatch(p, c.Name, cs)
			started, err := m.restart(ctx, p, sbCfg, c, cs, l, st)
			changed = changed || started
			if err != nil {
				return err
			}
		}
	}
	m.setStatus(p, statuses)
	if changed {
		// Look again at once, so an instant crash is seen at the time it happened.
		m.enqueue(p.syncKey(), m.clk.Now())
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
			if err := m.request(ctx, func(ctx context.Context) error { return m.rt.StopPodSandbox(ctx, s.Id) }); err != nil {
				return fmt.Errorf("stopping sandbox: %w", err)
			}
		}
	}
	return nil
}

func (m *Manager) runSandbox(ctx context.Context, p *podState, attempt uint32) error {
	cfg := m.sandboxConfig(p.pod, attempt)
	var id string
	if err := m.request(ctx, func(ctx context.Context) (err error) {
		id, err = m.rt.RunPodSandbox(ctx, cfg, "")
		return err
	}); err != nil {
		m.rec.Eventf(podRef(p.pod), corev1.EventTypeWarning, "FailedCreatePodSandBox", "CreatePodSandbox", "Failed to create pod sandbox: %v", err)
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
	return m.request(ctx, func(ctx context.Context) error {
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
func (m *Manager) restart(ctx context.Context, p *podState, sbCfg *runtimeapi.PodSandboxConfig, c *corev1.Container, cs *ctrState, l *runtimeapi.Container, st *runtimeapi.ContainerStatus) (bool, error) {
	pod := p.pod
	policy := pod.Spec.RestartPolicy
	if policy == "" {
		policy = corev1.RestartPolicyAlways
	}
	if policy == corev1.RestartPolicyNever || (policy == corev1.RestartPolicyOnFailure && st.ExitCode == 0) {
		cs.waiting = nil
		return false, nil
	}
	now := m.clk.Now()
	finished := time.Unix(0, st.FinishedAt)
	cs.lastTerm = terminated(st, m.runtimeName+"://"+l.Id)
	if until, wait := cs.crash.waitSince(finished, now); wait {
		msg := fmt.Sprintf("back-off %v restarting failed container=%s pod=%s_%s(%s)", cs.crash.delay, c.Name, pod.Name, pod.Namespace, pod.UID)
		cs.waiting = &corev1.ContainerStateWaiting{Reason: waitCrashLoop, Message: msg}
		m.rec.Eventf(containerRef(pod, c.Name), corev1.EventTypeWarning, ReasonBackOff, "Restarting", "Back-off restarting failed container %s in pod %s_%s(%s)", c.Name, pod.Name, pod.Namespace, pod.UID)
		m.enqueue(p.syncKey(), until)
		return false, nil
	}
	cs.crash.next(finished, now)
	return m.startContainer(ctx, p, sbCfg, c, l.Metadata.GetAttempt()+1)
}

func terminated(st *runtimeapi.ContainerStatus, id string) *corev1.ContainerStateTerminated {
	return &corev1.ContainerStateTerminated{
		ExitCode:    st.ExitCode,
		Reason:      st.Reason,
		Message:     st.Message,
		StartedAt:   metav1.NewTime(time.Unix(0, st.StartedAt)),
		FinishedAt:  metav1.NewTime(time.Unix(0, st.FinishedAt)),
		ContainerID: id,
	}
}

// startContainer pulls the image as the pull policy says, then creates and starts attempt number
// attempt of c. It reports whether a container started; a wait for an image is not an error.
func (m *Manager) startContainer(ctx context.Context, p *podState, sbCfg *runtimeapi.PodSandboxConfig, c *corev1.Container, attempt uint32) (bool, error) {
	pod := p.pod
	cs := p.ctr(c.Name)
	ref, ok := m.ensureImage(ctx, p, c, cs, sbCfg)
	if !ok {
		return false, nil
	}
	cfg := containerConfig(pod, c, ref, attempt)
	var id string
	if err := m.request(ctx, func(ctx context.Context) (err error) {
		id, err = m.rt.CreateContainer(ctx, p.sandboxID, cfg, sbCfg)
		return err
	}); err != nil {
		cs.waiting = &corev1.ContainerStateWaiting{Reason: waitCreateError, Message: err.Error()}
		m.rec.Eventf(containerRef(pod, c.Name), corev1.EventTypeWarning, ReasonFailed, "Create", "Error: %v", err)
		return false, fmt.Errorf("creating container %s: %w", c.Name, err)
	}
	m.rec.Eventf(containerRef(pod, c.Name), corev1.EventTypeNormal, ReasonCreated, "Create", "Created container: %s", c.Name)
	if err := m.start(ctx, p, c, cs, id); err != nil {
		return false, err
	}
	return true, nil
}

func (m *Manager) start(ctx context.Context, p *podState, c *corev1.Container, cs *ctrState, id string) error {
	if err := m.request(ctx, func(ctx context.Context) error { return m.rt.StartContainer(ctx, id) }); err != nil {
		cs.waiting = &corev1.ContainerStateWaiting{Reason: waitRunError, Message: err.Error()}
		m.rec.Eventf(containerRef(p.pod, c.Name), corev1.EventTypeWarning, ReasonFailed, "Start", "Error: %v", err)
		return fmt.Errorf("starting container %s: %w", c.Name, err)
	}
	cs.waiting = nil
	m.rec.Eventf(containerRef(p.pod, c.Name), corev1.EventTypeNormal, ReasonStarted, "Start", "Started container %s", c.Name)
	return nil
}
