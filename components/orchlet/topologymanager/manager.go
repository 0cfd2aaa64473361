package topologymanager

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Manager is the kubelet's topology manager as a pod admit handler of its own: under a policy
// other than none it merges the hints of every provider (the static CPU manager, the Static
// memory manager, whichever are on), refuses a pod the policy does not admit with
// TopologyAffinityError and allocates each container's resources from the merged hint's NUMA
// nodes, as the kubelet's scopes do; no provider depends on another.
type Manager struct {
	policy, scope string
	opts          Options
	nodes         []int
	distances     Distances
	providers     []Provider
	// mu serializes admissions: a pod's hints are computed and its resources allocated before the
	// next pod's hints are.
	mu sync.Mutex
}

// New is the topology manager of --topology-manager-policy and --topology-manager-scope on a
// machine of the NUMA nodes (their distances for prefer-closest-numa-nodes), over providers in
// the order they allocate. Like the kubelet, it refuses a machine of more NUMA nodes than
// max-allowable-numa-nodes. The policy and scope are the options' validated names.
func New(policy, scope string, opts Options, nodes []int, distances Distances, providers ...Provider) (*Manager, error) {
	if policy != PolicyNone && len(nodes) > opts.MaxNUMANodes {
		return nil, fmt.Errorf("--topology-manager-policy (topologyManagerPolicy): unsupported on machines with more than %d NUMA Nodes (this one has %d; max-allowable-numa-nodes raises the limit)", opts.MaxNUMANodes, len(nodes))
	}
	return &Manager{policy: policy, scope: scope, opts: opts, nodes: nodes, distances: distances, providers: providers}, nil
}

// Admit is the topology manager's admission: for the pod scope one merge of the pod's hints whose
// affinity every container is allocated with, for the container scope one merge per container
// (init containers first); a refusal gives back what every provider gave the pod. Under the none
// policy it admits without allocating: the providers allocate when a container is created.
func (m *Manager) Admit(pod *corev1.Pod) (bool, string, string) {
	if m.policy == PolicyNone {
		return true, "", ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	refuse := func(reason, msg string) (bool, string, string) {
		for _, p := range m.providers {
			p.Release(pod)
		}
		return false, reason, msg
	}
	var podAffinity Mask
	if m.scope == ScopePod {
		var ok bool
		if podAffinity, ok = m.merge(pod, nil); !ok {
			return refuse(ReasonTopologyAffinityError, MessageTopologyAffinityError)
		}
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			c := &cs[i]
			affinity := podAffinity
			if m.scope != ScopePod {
				var ok bool
				if affinity, ok = m.merge(pod, c); !ok {
					return refuse(ReasonTopologyAffinityError, MessageTopologyAffinityError)
				}
			}
			for _, p := range m.providers {
				if err := p.Allocate(pod, c, affinity); err != nil {
					return refuse("UnexpectedAdmissionError", fmt.Sprintf("Allocate failed due to %v, which is unexpected", err))
				}
			}
		}
	}
	return true, "", ""
}

// merge is the best hint of every provider's hints for c (nil: the pod) and whether the policy
// admits it.
func (m *Manager) merge(pod *corev1.Pod, c *corev1.Container) (Mask, bool) {
	var resources [][]Hint
	for _, p := range m.providers {
		resources = append(resources, p.Hints(pod, c)...)
	}
	best, admit := MergeWith(m.policy, m.nodes, resources, m.opts, m.distances)
	return best.Affinity, admit
}
