package pods

import (
	"reflect"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/status"
)

// setStatus computes the pod's status from its containers' runtime statuses (nil: none yet) and
// the reasons the manager made them wait, and marks the pod for the next publish when it changed.
func (m *Manager) setStatus(p *podState, statuses map[string]*runtimeapi.ContainerStatus) {
	if statuses != nil {
		p.lastStatuses = statuses
	}
	st := m.statusGen.Status(status.Pod{
		Pod: p.pod, PodIP: p.podIP, StartTime: p.startTime, Reason: p.reason, Message: p.msg,
		Terminal: p.terminal, Initialized: p.initialized, SandboxReady: p.sandboxReady,
		Evicted: p.evicted != nil, EvictReason: p.evictReason, EvictMessage: p.evictMessage,
		Container: func(name string) status.Container {
			cs := p.ctr(name)
			return status.Container{Waiting: cs.waiting, LastTerm: cs.lastTerm, Probes: &cs.Container}
		},
		Old: &p.status,
	}, statuses, m.clk.Now())
	if !reflect.DeepEqual(p.status, st) { // built the same way each time: no semantic equality needed
		m.touch(p.pod.UID)
	}
	p.status = st
}
