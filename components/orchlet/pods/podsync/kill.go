package podsync

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/pods/prober"
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
func (s *Syncer) postStart(ctx context.Context, p *PodState, c *corev1.Container, cs *ctrState, id string) error {
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil {
		return nil
	}
	if sleep := c.Lifecycle.PostStart.Sleep; sleep != nil {
		// The kubelet starts the next container once the hook is over: startContainer holds
		// until then, and the pod's sync is queued for it.
		p.holdUntil = s.clk.Now().Add(time.Duration(sleep.Seconds) * time.Second)
		s.queue.Sync(p.Pod, p.holdUntil)
		return nil
	}
	msg, err := s.prober.RunHook(ctx, prober.Target{Pod: p.Pod, PodIP: p.podIP, Container: c}, id, c.Lifecycle.PostStart, 0)
	if err == nil {
		return nil
	}
	s.log.Error(err, "PostStart hook failed", "pod", p.Pod.Name, "namespace", p.Pod.Namespace, "container", c.Name)
	// The message stays out of the event, as in the kubelet, so secrets do not leak through it.
	s.rec.Eventf(events.ContainerReference(p.Pod, c.Name), corev1.EventTypeWarning, ReasonFailedPostStartHook, "Start", "PostStartHook failed")
	if _, err := s.killContainer(ctx, p, c.Name, c, id, ReasonFailedPostStartHook, gracePeriod(p.Pod)); err != nil {
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
func (s *Syncer) killContainer(ctx context.Context, p *PodState, name string, c *corev1.Container, id, note string, grace int64) (bool, error) {
	if d, ok := p.deferred[id]; ok {
		if s.clk.Now().Before(d.at) {
			s.queue.Sync(p.Pod, d.at)
			return false, nil
		}
		delete(p.deferred, id)
		return true, s.stopWithin(ctx, p, id, d.grace)
	}
	s.rec.Eventf(events.ContainerReference(p.Pod, name), corev1.EventTypeNormal, ReasonKilling, "Killing", "%s", note)
	if c != nil && c.Lifecycle != nil && c.Lifecycle.PreStop != nil && grace > 0 {
		if sleep := c.Lifecycle.PreStop.Sleep; sleep != nil {
			wait := min(sleep.Seconds, grace)
			at := s.clk.Now().Add(time.Duration(wait) * time.Second)
			if p.deferred == nil {
				p.deferred = map[string]deferredStop{}
			}
			p.deferred[id] = deferredStop{at: at, grace: grace - wait}
			s.queue.Sync(p.Pod, at)
			return false, nil
		}
		start := s.clk.Now()
		if msg, err := s.prober.RunHook(ctx, prober.Target{Pod: p.Pod, PodIP: p.podIP, Container: c}, id, c.Lifecycle.PreStop, time.Duration(grace)*time.Second); err != nil {
			s.log.Error(err, "PreStop hook failed", "pod", p.Pod.Name, "namespace", p.Pod.Namespace, "container", name, "message", msg)
			s.rec.Eventf(events.ContainerReference(p.Pod, name), corev1.EventTypeWarning, ReasonFailedPreStopHook, "Killing", "PreStopHook failed")
		}
		grace -= int64(s.clk.Since(start).Seconds())
	}
	return true, s.stopWithin(ctx, p, id, grace)
}

// deferredStop is a StopContainer put off until a preStop sleep ends, with the grace left then.
type deferredStop struct {
	at    time.Time
	grace int64
}

// stopWithin stops id with grace seconds (at least 2) to exit; the request may take the runtime
// timeout on top of it, as Kubernetes' CRI client allows.
func (s *Syncer) stopWithin(ctx context.Context, p *PodState, id string, grace int64) error {
	grace = max(grace, minGracePeriod)
	p.changedRuntime = true
	return s.calls.Within(ctx, s.timeout+time.Duration(grace)*time.Second, func(ctx context.Context) error {
		return s.rt.StopContainer(ctx, id, grace)
	})
}
