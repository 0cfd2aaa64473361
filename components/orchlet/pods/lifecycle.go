package pods

import (
	"context"
	"time"

	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/pods/prober"

	corev1 "k8s.io/api/core/v1"
)

// Kubernetes' kubelet figure for stopping containers.
const (
	// minGracePeriod is the least time a container gets to stop, preStop hook or not.
	minGracePeriod = 2
)

// Event reasons and waiting reasons of lifecycle hooks and deadlines, as Kubernetes'.
const (
	ReasonFailedPostStartHook = "FailedPostStartHook"
	ReasonFailedPreStopHook   = "FailedPreStopHook"
	ReasonDeadlineExceeded    = "DeadlineExceeded"
	waitPostStartHookError    = "PostStartHookError"
)

// postStart runs c's postStart hook right after the start of instance id, as the kubelet does: a
// failure is a FailedPostStartHook event, and the instance is killed and waits as
// PostStartHookError until the restart policy and back-off bring it back.
func (m *Manager) postStart(ctx context.Context, p *podState, c *corev1.Container, cs *ctrState, id string) error {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	if s := c.Lifecycle.PostStart.Sleep; s != nil {
		// The kubelet starts the next container once the hook is over: startContainer holds
		// until then, and the pod's sync is queued for it.
		p.holdUntil = m.clk.Now().Add(time.Duration(s.Seconds) * time.Second)
		m.enqueue(p.syncKey(), p.holdUntil)
		return nil
	}
	msg, err := m.prober.RunHook(ctx, prober.Target{Pod: p.pod, PodIP: p.podIP, Container: c}, id, c.Lifecycle.PostStart, 0)
	if err == nil {
		return nil
	}
	m.log.Error(err, "PostStart hook failed", "pod", p.pod.Name, "namespace", p.pod.Namespace, "container", c.Name)
	// The message stays out of the event, as in the kubelet, so secrets do not leak through it.
	m.rec.Eventf(events.ContainerReference(p.pod, c.Name), corev1.EventTypeWarning, ReasonFailedPostStartHook, "Start", "PostStartHook failed")
	if _, err := m.killContainer(ctx, p, c.Name, c, id, ReasonFailedPostStartHook, m.gracePeriod(p.pod)); err != nil {
		return err
	}
	cs.waiting = &corev1.ContainerStateWaiting{Reason: waitPostStartHookError, Message: msg}
	return nil
}

// killContainer is the kubelet's killContainer: a Killing event with note, c's preStop hook (if
// any) within the grace period, then StopContainer with what is left of it, at least 2 seconds.
// c is nil for a container no longer in the spec. A sleep hook is not waited for here: the stop
// is put off until it ends (the pod's sync is queued then) and killContainer reports false; it
// is called again then, and stops the container.
func (m *Manager) killContainer(ctx context.Context, p *podState, name string, c *corev1.Container, id, note string, grace int64) (bool, error) {
	if d, ok := p.deferred[id]; ok {
		if m.clk.Now().Before(d.at) {
			m.enqueue(p.syncKey(), d.at)
			return false, nil
		}
		delete(p.deferred, id)
		return true, m.stopWithin(ctx, id, d.grace)
	}
	m.rec.Eventf(events.ContainerReference(p.pod, name), corev1.EventTypeNormal, ReasonKilling, "Killing", "%s", note)
	if c != nil && c.Lifecycle != nil && c.Lifecycle.PreStop != nil && grace > 0 {
		if s := c.Lifecycle.PreStop.Sleep; s != nil {
			wait := min(s.Seconds, grace)
			at := m.clk.Now().Add(time.Duration(wait) * time.Second)
			if p.deferred == nil {
				p.deferred = map[string]deferredStop{}
			}
			p.deferred[id] = deferredStop{at: at, grace: grace - wait}
			m.enqueue(p.syncKey(), at)
			return false, nil
		}
		start := m.clk.Now()
		if msg, err := m.prober.RunHook(ctx, prober.Target{Pod: p.pod, PodIP: p.podIP, Container: c}, id, c.Lifecycle.PreStop, time.Duration(grace)*time.Second); err != nil {
			m.log.Error(err, "PreStop hook failed", "pod", p.pod.Name, "namespace", p.pod.Namespace, "container", name, "message", msg)
			m.rec.Eventf(events.ContainerReference(p.pod, name), corev1.EventTypeWarning, ReasonFailedPreStopHook, "Killing", "PreStopHook failed")
		}
		grace -= int64(m.clk.Since(start).Seconds())
	}
	return true, m.stopWithin(ctx, id, grace)
}

// deferredStop is a StopContainer put off until a preStop sleep ends, with the grace left then.
type deferredStop struct {
	at    time.Time
	grace int64
}

// stopWithin stops id with grace seconds (at least 2) to exit; the request may take the runtime
// timeout on top of it, as Kubernetes' CRI client allows.
func (m *Manager) stopWithin(ctx context.Context, id string, grace int64) error {
	grace = max(grace, minGracePeriod)
	return m.calls.Within(ctx, m.timeout+time.Duration(grace)*time.Second, func(ctx context.Context) error {
		return m.rt.StopContainer(ctx, id, grace)
	})
}

// killGrace is the grace period for killing c: the deletion's, else a failed probe's own
// terminationGracePeriodSeconds, else the pod's, as the kubelet's setTerminationGracePeriod.
func (m *Manager) killGrace(pod *corev1.Pod, c *corev1.Container, why prober.Type) int64 {
	if pod.DeletionGracePeriodSeconds == nil && c != nil {
		if pr := why.Of(c); pr != nil && pr.TerminationGracePeriodSeconds != nil {
			return *pr.TerminationGracePeriodSeconds
		}
	}
	return m.gracePeriod(pod)
}

// deadlineExceeded says whether the pod ran past activeDeadlineSeconds since it started.
func (m *Manager) deadlineExceeded(p *podState) bool {
	d := p.pod.Spec.ActiveDeadlineSeconds
	return d != nil && !m.clk.Now().Before(p.startTime.Add(time.Duration(*d)*time.Second))
}

// checkDeadline queues the pod's sync for when its active deadline passes.
func (m *Manager) checkDeadline(p *podState) {
	if d := p.pod.Spec.ActiveDeadlineSeconds; d != nil && p.terminal == "" {
		m.enqueue(p.syncKey(), p.startTime.Add(time.Duration(*d)*time.Second))
	}
}
