package topologymanager

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fixedProvider hints the same nodes for every container and records what it allocates.
type fixedProvider struct {
	hints     []Hint
	allocated map[string]Mask
	released  int
}

func (p *fixedProvider) Hints(*corev1.Pod, *corev1.Container) [][]Hint { return [][]Hint{p.hints} }

func (p *fixedProvider) Allocate(_ *corev1.Pod, c *corev1.Container, affinity Mask) error {
	p.allocated[c.Name] = affinity
	return nil
}

func (p *fixedProvider) Release(*corev1.Pod) { p.released++ }

// The manager admits on its own over whichever providers are on: every provider's hints merged,
// each container allocated from the merged hint (the pod's under the pod scope), a refusal
// releasing every provider; the none policy allocates nothing at admission; a machine of more
// NUMA nodes than max-allowable-numa-nodes is refused at start.
func TestManager(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "p"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init"}}, Containers: []corev1.Container{{Name: "app"}, {Name: "side"}}}}
	provider := func(nodes ...int) *fixedProvider {
		var hints []Hint
		for _, n := range nodes {
			hints = append(hints, Hint{Affinity: MaskOf(n), Preferred: true})
		}
		return &fixedProvider{hints: hints, allocated: map[string]Mask{}}
	}
	opts := Options{MaxNUMANodes: DefaultMaxNUMANodes}
	for _, tc := range []struct {
		name, policy, scope string
		a, b                *fixedProvider
		admit               bool
		want                Mask // every container's affinity when admitted
	}{
		{"agreeing providers", PolicySingleNUMANode, ScopeContainer, provider(1, 2), provider(2, 3), true, MaskOf(2)},
		{"the pod scope", PolicySingleNUMANode, ScopePod, provider(1, 2), provider(2), true, MaskOf(2)},
		{"disagreeing providers", PolicySingleNUMANode, ScopeContainer, provider(0), provider(1), false, 0},
		{"disagreeing under best-effort", PolicyBestEffort, ScopeContainer, provider(0), provider(1), true, MaskOf(0, 1, 2, 3)},
		{"the none policy", PolicyNone, ScopeContainer, provider(0), provider(1), true, 0},
	} {
		m, err := New(tc.policy, tc.scope, opts, []int{0, 1, 2, 3}, nil, tc.a, tc.b)
		if err != nil {
			t.Fatal(err)
		}
		ok, reason, msg := m.Admit(pod)
		if ok != tc.admit {
			t.Errorf("%s: admitted %v (%s %s), want %v", tc.name, ok, reason, msg, tc.admit)
			continue
		}
		if !ok {
			if reason != ReasonTopologyAffinityError || msg != MessageTopologyAffinityError || tc.a.released != 1 || tc.b.released != 1 {
				t.Errorf("%s: %s %q, released %d and %d", tc.name, reason, msg, tc.a.released, tc.b.released)
			}
			continue
		}
		for _, p := range []*fixedProvider{tc.a, tc.b} {
			if tc.policy == PolicyNone {
				if len(p.allocated) != 0 {
					t.Errorf("%s: allocated %v at admission", tc.name, p.allocated)
				}
				continue
			}
			for _, c := range []string{"init", "app", "side"} {
				if got, ok := p.allocated[c]; !ok || got != tc.want {
					t.Errorf("%s: %s allocated %v (%v), want %v", tc.name, c, got, ok, tc.want)
				}
			}
		}
	}

	nodes := make([]int, 10)
	for i := range nodes {
		nodes[i] = i
	}
	if _, err := New(PolicyRestricted, ScopeContainer, opts, nodes, nil); err == nil ||
		!strings.Contains(err.Error(), "unsupported on machines with more than 8 NUMA Nodes (this one has 10") {
		t.Errorf("10 NUMA nodes: %v", err)
	}
	if _, err := New(PolicyRestricted, ScopeContainer, Options{MaxNUMANodes: 16}, nodes, nil); err != nil {
		t.Errorf("with max-allowable-numa-nodes=16: %v", err)
	}
	if _, err := New(PolicyNone, ScopeContainer, opts, nodes, nil); err != nil {
		t.Errorf("the none policy on 10 nodes: %v", err)
	}
}
