package pods

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/prober"
)

// watch starts probing a newly seen running instance of c: each probe first initialDelaySeconds
// after it started, then every periodSeconds.
func (m *Manager) watch(p *podState, c *corev1.Container, cs *ctrState, id string, st *runtimeapi.ContainerStatus) {
	if cs.ProbedID == id {
		return
	}
	m.unwatch(p, c.Name, cs)
	cs.Watch(id)
	m.touch(p.pod.UID)
	now := m.clk.Now()
	for _, t := range prober.Types {
		if pr := t.Of(c); pr != nil {
			m.enqueue(p.probeKey(c.Name, t), prober.FirstProbe(pr, time.Unix(0, st.StartedAt), now))
		}
	}
}

// unwatch stops probing c's instance, which is no longer running.
func (m *Manager) unwatch(p *podState, name string, cs *ctrState) {
	cs.Unwatch()
	for _, t := range prober.Types {
		m.dequeue(p.probeKey(name, t))
	}
}

// probe runs one of the container's probes once and queues what it asks for.
func (m *Manager) probe(ctx context.Context, p *podState, name string, t prober.Type) {
	cs := p.ctrs[name]
	c, isInit := p.container(name)
	if cs == nil || c == nil {
		return
	}
	out := m.prober.Probe(ctx, prober.Target{Pod: p.pod, PodIP: p.podIP, Container: c, Init: isInit}, &cs.Container, t)
	if out.Changed {
		m.touch(p.pod.UID)
	}
	if out.Sync {
		m.enqueue(p.syncKey(), out.SyncAt)
	}
	if !out.Next.IsZero() {
		m.enqueue(p.probeKey(name, t), out.Next)
	}
}
