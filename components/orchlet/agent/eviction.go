package agent

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/eviction"
)

// newEviction starts the eviction manager on the pod workers when the agent has an observer.
func (a *Agent) newEviction(cfg *v1beta1.OrchletConfiguration, d Deps) error {
	if d.Observer == nil {
		return nil
	}
	ec, err := eviction.ConfigFrom(cfg)
	if err != nil {
		return err
	}
	a.Eviction, err = eviction.NewManager(eviction.Options{
		Clock: d.Clock, Config: ec, Observer: d.Observer, Reclaimer: d.Reclaimer, Pods: a.Pods,
		Recorder: a.Events, NodeName: d.NodeName, Logger: d.Logger,
	})
	if err != nil {
		return fmt.Errorf("eviction manager: %w", err)
	}
	return nil
}

// admit is the eviction manager's admission (every pod without one), run before the pod
// workers' own handlers.
func (a *Agent) admit(pod *corev1.Pod) (bool, string, string) {
	if a.Eviction == nil {
		return true, "", ""
	}
	return a.Eviction.Admit(pod)
}

// Pressure are the node's pressure conditions (none without an eviction manager).
func (a *Agent) Pressure() []corev1.NodeConditionType {
	if a.Eviction == nil {
		return nil
	}
	return a.Eviction.Conditions()
}
