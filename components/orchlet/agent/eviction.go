package agent

import (
	"context"
	"errors"
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
	reclaimer := d.Reclaimer
	if reclaimer == nil {
		reclaimer = gcReclaimer{a}
	}
	a.Eviction, err = eviction.NewManager(eviction.Options{
		Clock: d.Clock, Config: ec, Observer: d.Observer, Reclaimer: reclaimer, Pods: a.Pods,
		Recorder: a.Events, NodeName: d.NodeName, Logger: d.Logger, Memcg: d.Memcg, MemcgUnavailable: d.MemcgUnavailable,
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

// gcReclaimer is node-level reclaim through the agent's garbage collectors, which EnableGC makes
// after the eviction manager (and before Run, or a simulator's first step).
type gcReclaimer struct{ a *Agent }

var errNoGC = errors.New("the agent has no garbage collector")

func (r gcReclaimer) DeleteAllUnusedContainers(ctx context.Context) error {
	if r.a.GC == nil {
		return errNoGC
	}
	return r.a.GC.Containers.DeleteAllUnusedContainers(ctx)
}

func (r gcReclaimer) DeleteUnusedImages(ctx context.Context) error {
	if r.a.GC == nil {
		return errNoGC
	}
	_, err := r.a.GC.Images.DeleteUnusedImages(ctx)
	return err
}
