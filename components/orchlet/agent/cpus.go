package agent

import (
	"errors"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/cpumanager"
	"orch.io/orch/components/orchlet/pods/labels"
)

// newCPUManager is --cpu-manager-policy's CPU manager; only the static policy reads the topology
// and --root-dir.
func (a *Agent) newCPUManager(cfg *v1beta1.OrchletConfiguration, d Deps) (*cpumanager.Manager, error) {
	o := cpumanager.Options{
		Policy: cfg.CPUManagerPolicy, ReservedCPUs: cfg.ReservedSystemCPUs, RootDir: d.RootDir,
		Clock: d.Clock, Runtime: d.Runtime, PodUIDLabel: labels.PodUID, ContainerNameLabel: labels.ContainerName,
		ActivePods: a.activePods, Ready: d.SourcesReady, ReconcilePeriod: cfg.CPUManagerReconcilePeriod.Duration, Logger: d.Logger,
		PolicyOptions: cfg.CPUManagerPolicyOptions, Enabled: d.Gates.Enabled,
		TopologyPolicy: cfg.TopologyManagerPolicy,
	}
	if o.Policy != cpumanager.PolicyStatic {
		return cpumanager.New(o)
	}
	if d.RootDir == "" {
		return nil, fmt.Errorf("--cpu-manager-policy=static: --root-dir is required for %s", cpumanager.StateFile)
	}
	if d.CPUTopology == nil {
		return nil, errors.New("--cpu-manager-policy=static: the machine's CPU topology is unknown (a simulated machine has no sysfs to read it from)")
	}
	var err error
	if o.Topology, err = d.CPUTopology(); err != nil {
		return nil, fmt.Errorf("--cpu-manager-policy=static: %w", err)
	}
	// The kubelet reserves the CPUs --kube-reserved and --system-reserved set aside, rounded up.
	var milli int64
	for _, m := range []map[string]string{cfg.KubeReserved, cfg.SystemReserved} {
		if q, err := resource.ParseQuantity(m["cpu"]); err == nil {
			milli += q.MilliValue()
		}
	}
	o.ReservedCount = int(math.Ceil(float64(milli) / 1000))
	return cpumanager.New(o)
}

// activePods are the pods the workers hold that have not terminated, whose CPUs stay theirs.
func (a *Agent) activePods() map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, p := range a.Pods.Pods() {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out[p.UID] = true
		}
	}
	return out
}
