package agent

import (
	"errors"
	"fmt"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/memorymanager"
	"orch.io/orch/components/orchlet/topologymanager"
)

// newMemoryManager is --memory-manager-policy's memory manager; only the Static policy reads the
// NUMA nodes. Under a topology policy it is one of the topology manager's providers, whatever the
// CPU manager's policy.
func (a *Agent) newMemoryManager(cfg *v1beta1.OrchletConfiguration, d Deps) (*memorymanager.Manager, error) {
	o := memorymanager.Options{
		Policy: cfg.MemoryManagerPolicy, NodeReservation: d.Reservation, Reserved: cfg.ReservedMemory, RootDir: d.RootDir,
		ActivePods: a.activePods, Ready: d.SourcesReady, Clock: d.Clock, ReconcilePeriod: cfg.CPUManagerReconcilePeriod.Duration,
	}
	if o.Policy == memorymanager.PolicyStatic {
		if d.NUMANodes == nil {
			return nil, errors.New("--memory-manager-policy=Static: the machine's NUMA nodes are unknown (a simulated machine has no sysfs to read them from)")
		}
		var err error
		if o.Nodes, err = d.NUMANodes(); err != nil {
			return nil, fmt.Errorf("--memory-manager-policy=Static: %w", err)
		}
	}
	return memorymanager.New(o)
}

// newTopologyManager is --topology-manager-policy's topology manager, the pod admit handler
// that aligns its providers: the static CPU manager and the Static memory manager, each when on,
// as the kubelet's. Nil under the none policy or without a provider: nothing is aligned then, and
// the memory manager admits pods itself (the kubelet's admitPolicyNone).
func (a *Agent) newTopologyManager(cfg *v1beta1.OrchletConfiguration, d Deps) (*topologymanager.Manager, error) {
	opts, err := topologymanager.ParseOptions(cfg.TopologyManagerPolicyOptions, d.Gates.Enabled)
	if err != nil {
		return nil, fmt.Errorf("--topology-manager-policy-options (topologyManagerPolicyOptions): %w", err)
	}
	var providers []topologymanager.Provider
	if a.CPUs.Static() {
		providers = append(providers, a.CPUs)
	}
	if a.Memory.Static() {
		providers = append(providers, a.Memory)
	}
	policy := cfg.TopologyManagerPolicy
	if policy == "" || policy == topologymanager.PolicyNone || len(providers) == 0 {
		return nil, nil
	}
	if d.CPUTopology == nil {
		return nil, fmt.Errorf("--topology-manager-policy=%s: the machine's NUMA nodes are unknown (a simulated machine has no sysfs to read them from)", policy)
	}
	machine, err := d.CPUTopology()
	if err != nil {
		return nil, fmt.Errorf("--topology-manager-policy=%s: %w", policy, err)
	}
	return topologymanager.New(policy, cfg.TopologyManagerScope, opts, machine.NUMANodes(), machine.Distances, providers...)
}
