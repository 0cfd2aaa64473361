package agent

import (
	"errors"
	"fmt"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/memorymanager"
	"orch.io/orch/components/orchlet/topologymanager"
)

// newMemoryManager is --memory-manager-policy's memory manager; only the Static policy reads the
// NUMA nodes. Its hints reach the topology manager through the static CPU manager, which this
// agent's topology manager lives in: Static with a topology policy but no static CPU manager is
// refused rather than left unaligned.
func (a *Agent) newMemoryManager(cfg *v1beta1.OrchletConfiguration, d Deps) (*memorymanager.Manager, error) {
	o := memorymanager.Options{
		Policy: cfg.MemoryManagerPolicy, NodeReservation: d.Reservation, Reserved: cfg.ReservedMemory, RootDir: d.RootDir,
		ActivePods: a.activePods, Ready: d.SourcesReady, Clock: d.Clock, ReconcilePeriod: cfg.CPUManagerReconcilePeriod.Duration,
	}
	if o.Policy == memorymanager.PolicyStatic {
		if d.NUMANodes == nil {
			return nil, errors.New("--memory-manager-policy=Static: the machine's NUMA nodes are unknown (a simulated machine has no sysfs to read them from)")
		}
		if p := cfg.TopologyManagerPolicy; p != "" && p != topologymanager.PolicyNone && cfg.CPUManagerPolicy != "static" {
			return nil, fmt.Errorf("--memory-manager-policy=Static with --topology-manager-policy=%s: this orchlet's topology manager merges the memory manager's hints beside the static CPU manager's; set --cpu-manager-policy=static", p)
		}
		var err error
		if o.Nodes, err = d.NUMANodes(); err != nil {
			return nil, fmt.Errorf("--memory-manager-policy=Static: %w", err)
		}
	}
	return memorymanager.New(o)
}

// wireMemory makes the memory manager a hint provider of the topology manager when a topology
// policy is set; otherwise it admits each pod on its own, as the kubelet's admitPolicyNone.
func (a *Agent) wireMemory(cfg *v1beta1.OrchletConfiguration) {
	if !a.Memory.Static() {
		return
	}
	if p := cfg.TopologyManagerPolicy; p != "" && p != topologymanager.PolicyNone {
		a.hintProviders = []topologymanager.Provider{a.Memory}
	} else {
		a.memoryAdmits = true
	}
}
