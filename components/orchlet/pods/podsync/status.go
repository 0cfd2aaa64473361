package podsync

import (
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/status"
)

// setStatus computes the pod's status from its containers' runtime statuses (nil: none yet) and
// the reasons the manager made them wait, and marks the pod for the next publish when it changed.
func (s *Syncer) setStatus(p *PodState, statuses map[string]*runtimeapi.ContainerStatus) {
	if statuses != nil {
		p.lastStatuses = statuses
	}
	in := status.Pod{
		Pod: p.Pod, PodIP: p.podIP, StartTime: p.startTime, Reason: p.reason, Message: p.msg,
		Terminal: p.terminal, Initialized: p.initialized, SandboxReady: p.sandboxReady,
		Container: func(name string) status.Container {
			cs := p.ctr(name)
			return status.Container{Waiting: cs.waiting, LastTerm: cs.lastTerm, Probes: &cs.Container}
		},
		Old: &p.Status,
	}
	if e := p.Evicted; e != nil {
		in.Evicted, in.EvictReason, in.EvictMessage = true, e.Reason, e.Message
	}
	st := s.statusGen.Status(in, statuses, s.clk.Now())
	if !statusEqual(&p.Status, &st) { // built the same way each time: no semantic equality needed
		s.queue.Touch(p.Pod.UID)
	}
	p.Status = st
}
