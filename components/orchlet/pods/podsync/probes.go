package podsync

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/prober"
)

// watch starts probing a newly seen running instance of c: each probe first initialDelaySeconds
// after it started, then every periodSeconds.
func (s *Syncer) watch(p *PodState, c *corev1.Container, cs *ctrState, id string, st *runtimeapi.ContainerStatus) {
	if cs.ProbedID == id {
		return
	}
	s.unwatch(p, c.Name, cs)
	cs.Watch(id)
	s.queue.Touch(p.Pod.UID)
	now := s.clk.Now()
	for _, t := range prober.Types {
		if pr := t.Of(c); pr != nil {
			s.queue.Probe(p.Pod, c.Name, t, prober.FirstProbe(pr, time.Unix(0, st.StartedAt), now))
		}
	}
}

// unwatch stops probing c's instance, which is no longer running.
func (s *Syncer) unwatch(p *PodState, name string, cs *ctrState) {
	cs.Unwatch()
	for _, t := range prober.Types {
		s.queue.Unprobe(p.Pod, name, t)
	}
}

// Probe runs one of the container's probes once and queues what it asks for.
func (s *Syncer) Probe(ctx context.Context, p *PodState, name string, t prober.Type) {
	cs := p.ctrs[name]
	c, isInit := p.container(name)
	if cs == nil || c == nil {
		return
	}
	out := s.prober.Probe(ctx, prober.Target{Pod: p.Pod, PodIP: p.podIP, Container: c, Init: isInit}, &cs.Container, t)
	if out.Changed {
		s.queue.Touch(p.Pod.UID)
	}
	if out.Sync {
		s.queue.Sync(p.Pod, out.SyncAt)
	}
	if !out.Next.IsZero() {
		s.queue.Probe(p.Pod, name, t, out.Next)
	}
}
