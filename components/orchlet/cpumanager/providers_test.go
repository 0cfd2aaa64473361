package cpumanager

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/orchlet/topologymanager"
)

// recordingProvider is a hint provider that hints one set of nodes and records its calls.
type recordingProvider struct {
	hints      []topologymanager.Hint
	allocated  map[string]topologymanager.Mask
	released   []string
	allocError error
}

func (p *recordingProvider) Hints(*corev1.Pod, *corev1.Container) [][]topologymanager.Hint {
	return [][]topologymanager.Hint{p.hints}
}

func (p *recordingProvider) Allocate(_ *corev1.Pod, c *corev1.Container, affinity topologymanager.Mask) error {
	if p.allocError != nil {
		return p.allocError
	}
	p.allocated[c.Name] = affinity
	return nil
}

func (p *recordingProvider) Release(pod *corev1.Pod) {
	p.released = append(p.released, string(pod.UID))
}

// The other providers' hints are merged with the CPUs': a provider that can only use node 2 puts
// the CPUs there and is allocated there; one no node satisfies alone refuses the pod under
// single-numa-node, and a provider's failed allocation refuses it as the kubelet's
// UnexpectedAdmissionError, each refusal releasing what the pod was given.
func TestHintProvidersMerged(t *testing.T) {
	manager := func(p *recordingProvider) (*Manager, *topologymanager.Manager) {
		m, err := newManager(t, t.TempDir(), activePods{"a": true}, func(o *Options) {
			o.Topology, o.TopologyPolicy = fourNUMA(t), topologymanager.PolicySingleNUMANode
		})
		if err != nil {
			t.Fatal(err)
		}
		return m, topologyManager(t, m, topologymanager.PolicySingleNUMANode, topologymanager.ScopeContainer, p)
	}
	node2 := &recordingProvider{hints: []topologymanager.Hint{{Affinity: topologymanager.MaskOf(2), Preferred: true}}, allocated: map[string]topologymanager.Mask{}}
	m, tm := manager(node2)
	a := pod("a", "2", "1Gi", "app")
	if ok, reason, msg := tm.Admit(a); !ok {
		t.Fatalf("refused: %s %s", reason, msg)
	}
	if got := node2.allocated["app"]; got != topologymanager.MaskOf(2) {
		t.Errorf("the provider was allocated %v, want node 2", got)
	}
	assigned := m.state.assignments["a"]["app"]
	for _, c := range m.o.Topology.CPUs {
		if assigned.Contains(c.ID) && c.NUMANode != 2 {
			t.Errorf("CPU %d of %s is on node %d, want node 2", c.ID, assigned, c.NUMANode)
		}
	}

	wide := &recordingProvider{hints: []topologymanager.Hint{{Affinity: topologymanager.MaskOf(0, 1), Preferred: true}}, allocated: map[string]topologymanager.Mask{}}
	_, tm = manager(wide)
	if ok, reason, _ := tm.Admit(pod("b", "2", "1Gi", "app")); ok || reason != topologymanager.ReasonTopologyAffinityError {
		t.Errorf("a provider needing two nodes: %v %s, want TopologyAffinityError", ok, reason)
	}
	if len(wide.released) != 1 || wide.released[0] != "b" {
		t.Errorf("released %v, want pod b", wide.released)
	}

	failing := &recordingProvider{allocError: errors.New("no memory"), allocated: map[string]topologymanager.Mask{}}
	m, tm = manager(failing)
	ok, reason, msg := tm.Admit(pod("c", "2", "1Gi", "app"))
	if ok || reason != "UnexpectedAdmissionError" || msg != "Allocate failed due to no memory, which is unexpected" {
		t.Errorf("a failed allocation: %v %s %q", ok, reason, msg)
	}
	if len(m.state.assignments) != 0 || len(failing.released) != 1 {
		t.Errorf("the refused pod keeps CPUs %v, or was not released (%v)", m.state.assignments, failing.released)
	}
}
