package pods

import (
	"context"
	"strings"
	"time"

	"orch.io/orch/components/orchlet/events"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/backoff"
	"orch.io/orch/components/orchlet/pods/status"
)

// pullKey names one container's pull of one image.
type pullKey struct {
	uid       types.UID
	container string
	image     string
}

// pullResult is how a pull ended.
type pullResult struct {
	key            pullKey
	ref            string
	err            error
	started, ended time.Time
}

// pullPolicy is c's policy, defaulted as Kubernetes does: Always for an untagged or :latest image
// without a digest, IfNotPresent otherwise.
func pullPolicy(c *corev1.Container) corev1.PullPolicy {
	return defaultPullPolicy(c.ImagePullPolicy, c.Image)
}

func defaultPullPolicy(policy corev1.PullPolicy, image string) corev1.PullPolicy {
	if policy != "" {
		return policy
	}
	if strings.Contains(image, "@") {
		return corev1.PullIfNotPresent
	}
	name := image[strings.LastIndex(image, "/")+1:]
	if i := strings.LastIndex(name, ":"); i < 0 || name[i+1:] == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// pullTarget is an image to make present: a container's, or an image volume's.
type pullTarget struct {
	image  string
	policy corev1.PullPolicy
	ref    *corev1.ObjectReference // the events' object: the container, or the pod for a volume
	key    pullKey
	back   *backoff.Backoff // the image's pull back-off
}

func containerPull(p *podState, c *corev1.Container, cs *ctrState) pullTarget {
	return pullTarget{image: c.Image, policy: pullPolicy(c), ref: events.ContainerReference(p.pod, c.Name),
		key: pullKey{uid: p.pod.UID, container: c.Name, image: c.Image}, back: &cs.pull}
}

// ensureImage makes t's image present as its pull policy says and returns the image reference to
// create the container from. When the image cannot be had now it sets why the container cs waits,
// queues the pod again when that can change and returns false.
func (m *Manager) ensureImage(ctx context.Context, p *podState, t pullTarget, cs *ctrState, sbCfg *runtimeapi.PodSandboxConfig) (string, bool) {
	pod := p.pod
	ref, key := t.ref, t.key
	if r, ok := m.takePulled(key); ok {
		return m.pullEnded(p, t, cs, r)
	}
	if m.podPulling(pod.UID) {
		// As Kubernetes' pod workers start a pod's containers one after the other, each waiting
		// for its image, no container of this pod starts while one of its pulls runs.
		cs.waiting = &corev1.ContainerStateWaiting{Reason: status.ContainerCreating}
		return "", false
	}
	spec := &runtimeapi.ImageSpec{Image: t.image, UserSpecifiedImage: t.image}
	var present string
	if err := m.calls.Request(ctx, func(ctx context.Context) error {
		resp, err := m.img.ImageStatus(ctx, spec, false)
		present = resp.GetImage().GetId()
		return err
	}); err != nil {
		cs.waiting = &corev1.ContainerStateWaiting{Reason: waitErrImagePull, Message: err.Error()}
		m.rec.Eventf(ref, corev1.EventTypeWarning, ReasonFailed, "Pull", "Failed to inspect image %q: %v", t.image, err)
		m.retryPull(p, t.back)
		return "", false
	}
	if present != "" && t.policy != corev1.PullAlways {
		m.rec.Eventf(ref, corev1.EventTypeNormal, ReasonPulled, "Pull", "Container image %q already present on machine", t.image)
		return present, true
	}
	if t.policy == corev1.PullNever {
		msg := "Container image \"" + t.image + "\" is not present with pull policy of Never"
		cs.waiting = &corev1.ContainerStateWaiting{Reason: ReasonNeverPull, Message: msg}
		m.rec.Eventf(ref, corev1.EventTypeWarning, ReasonNeverPull, "Pull", "%s", msg)
		return "", false
	}
	now := m.clk.Now()
	if until, wait := t.back.WaitSince(t.back.Last, now); wait {
		cs.waiting = &corev1.ContainerStateWaiting{Reason: waitImageBackOff, Message: "Back-off pulling image \"" + t.image + "\""}
		m.rec.Eventf(ref, corev1.EventTypeNormal, ReasonBackOff, "Pull", "Back-off pulling image %q", t.image)
		m.enqueue(p.syncKey(), until)
		return "", false
	}
	if m.limiter != nil {
		r := m.limiter.ReserveN(now, 1)
		if d := r.DelayFrom(now); d > 0 {
			// Wait for the token bucket on the clock rather than holding the queue.
			r.CancelAt(now)
			cs.waiting = &corev1.ContainerStateWaiting{Reason: status.ContainerCreating}
			m.enqueue(p.syncKey(), now.Add(d))
			return "", false
		}
	}
	auths, err := m.pullAuths(ctx, pod, t.image)
	if err != nil {
		return m.pullEnded(p, t, cs, pullResult{key: key, err: err, started: now, ended: now})
	}
	m.rec.Eventf(ref, corev1.EventTypeNormal, ReasonPulling, "Pull", "Pulling image %q", t.image)
	if m.parallel {
		m.startPull(ctx, key, spec, auths, sbCfg, now)
		cs.waiting = &corev1.ContainerStateWaiting{Reason: status.ContainerCreating}
		return "", false
	}
	var pulled string
	// serializeImagePulls: one pull at a time on the node, whichever pod workers want images.
	m.serialPull.Lock()
	err = m.calls.Within(ctx, 0, func(ctx context.Context) (err error) {
		pulled, err = m.pullImage(ctx, spec, auths, sbCfg)
		return err
	})
	m.serialPull.Unlock()
	return m.pullEnded(p, t, cs, pullResult{key: key, ref: pulled, err: err, started: now, ended: m.clk.Now()})
}

// pullEnded records how t's pull ended and returns the image reference when it succeeded.
func (m *Manager) pullEnded(p *podState, t pullTarget, cs *ctrState, r pullResult) (string, bool) {
	if r.err != nil {
		cs.waiting = &corev1.ContainerStateWaiting{Reason: waitErrImagePull, Message: r.err.Error()}
		m.rec.Eventf(t.ref, corev1.EventTypeWarning, ReasonFailed, "Pull", "Failed to pull image %q: %v", t.image, r.err)
		m.rec.Eventf(t.ref, corev1.EventTypeWarning, ReasonFailed, "Pull", "Error: %s", waitErrImagePull)
		m.retryPull(p, t.back)
		return "", false
	}
	*t.back = backoff.Backoff{}
	m.rec.Eventf(t.ref, corev1.EventTypeNormal, ReasonPulled, "Pull", "Successfully pulled image %q in %v", t.image, r.ended.Sub(r.started))
	return r.ref, true
}

// startPull runs a pull in the background (serializeImagePulls false); the Step after it ends
// hands its result to the pod's next sync. The pull has no deadline, as in the foreground.
func (m *Manager) startPull(ctx context.Context, key pullKey, spec *runtimeapi.ImageSpec, auths []*runtimeapi.AuthConfig, sbCfg *runtimeapi.PodSandboxConfig, started time.Time) {
	m.shared.Lock()
	m.pulling[key] = true
	m.shared.Unlock()
	m.calls.Go(ctx, func(ctx context.Context) {
		ref, err := m.pullImage(ctx, spec, auths, sbCfg)
		m.pullDone.add(pullResult{key: key, ref: ref, err: err, started: started, ended: m.clk.Now()})
	}, m.poke)
}

// applyPulls takes the background pulls that ended and queues their pods' syncs.
func (m *Manager) applyPulls() {
	done := m.pullDone.take()
	now := m.clk.Now()
	m.shared.Lock()
	defer m.shared.Unlock()
	for _, r := range done {
		delete(m.pulling, r.key)
		p := m.pods[r.key.uid]
		if p == nil || p.removed {
			continue
		}
		m.pulled[r.key] = r
		m.enqueueLocked(p.syncKey(), now)
	}
}

// podPulling reports whether a background pull of one of the pod's containers runs.
func (m *Manager) podPulling(uid types.UID) bool {
	m.shared.Lock()
	defer m.shared.Unlock()
	for k := range m.pulling {
		if k.uid == uid {
			return true
		}
	}
	return false
}

// takePulled hands over, once, the result of a background pull that ended.
func (m *Manager) takePulled(key pullKey) (pullResult, bool) {
	m.shared.Lock()
	defer m.shared.Unlock()
	r, ok := m.pulled[key]
	delete(m.pulled, key)
	return r, ok
}

func (m *Manager) retryPull(p *podState, b *backoff.Backoff) {
	now := m.clk.Now()
	b.Next(now, now)
	m.enqueue(p.syncKey(), now.Add(b.Delay))
}
