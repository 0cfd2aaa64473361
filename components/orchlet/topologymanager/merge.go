package topologymanager

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
)

// The policies of --topology-manager-policy and the scopes of --topology-manager-scope.
const (
	PolicyNone           = "none"
	PolicyBestEffort     = "best-effort"
	PolicyRestricted     = "restricted"
	PolicySingleNUMANode = "single-numa-node"

	ScopeContainer = "container"
	ScopePod       = "pod"
)

// The kubelet's admission failure of a pod no hint satisfies under the policy.
const (
	ReasonTopologyAffinityError  = "TopologyAffinityError"
	MessageTopologyAffinityError = "Resources cannot be allocated with Topology locality"
)

// Mask is a set of NUMA nodes, node n at bit n; 0 is no affinity (any node).
type Mask uint64

// MaskOf is the mask of the nodes.
func MaskOf(nodes ...int) Mask {
	var m Mask
	for _, n := range nodes {
		m |= 1 << n
	}
	return m
}

// Count is how many nodes the mask holds.
func (m Mask) Count() int { return bits.OnesCount64(uint64(m)) }

// Nodes are the mask's nodes, in order.
func (m Mask) Nodes() []int {
	var out []int
	for n := 0; n < 64; n++ {
		if m&(1<<n) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// narrower is the kubelet's IsNarrowerThan: fewer nodes, or as many and lower ones.
func (m Mask) narrower(o Mask) bool {
	if m.Count() != o.Count() {
		return m.Count() < o.Count()
	}
	return m < o
}

func (m Mask) String() string {
	var s []string
	for _, n := range m.Nodes() {
		s = append(s, fmt.Sprint(n))
	}
	return "{" + strings.Join(s, ",") + "}"
}

// Hint is a TopologyHint: the NUMA nodes a resource can be given from, and whether that is the
// preferred (narrowest possible) placement.
type Hint struct {
	Affinity  Mask
	Preferred bool
}

// Merge is the policy's Merge over the hints of each provider's resources: nil for a resource
// without a preference (any node, preferred), an empty slice for one no node can satisfy. The best
// hint of every combination, its affinity the intersection and preferred only when every hint of
// it is preferred and their affinities agree, is the one preferred, then the narrowest; the
// policy admits best-effort always, restricted a preferred hint, single-numa-node a preferred
// hint of one node (or none needed), and none everything without a hint.
func Merge(policy string, nodes []int, resources [][]Hint) (Hint, bool) {
	return MergeWith(policy, nodes, resources, Options{}, nil)
}

// MergeWith is Merge with the policy's options: with PreferClosest, of two hints of as many nodes
// the one whose nodes are closer on average (by distances) wins, as the kubelet's Closest.
func MergeWith(policy string, nodes []int, resources [][]Hint, opts Options, distances Distances) (Hint, bool) {
	if policy == PolicyNone || policy == "" {
		return Hint{}, true
	}
	all := MaskOf(nodes...)
	var hints [][]Hint
	for _, r := range resources {
		switch {
		case r == nil:
			hints = append(hints, []Hint{{0, true}})
		case len(r) == 0:
			hints = append(hints, []Hint{{0, false}})
		default:
			hints = append(hints, r)
		}
	}
	if policy == PolicySingleNUMANode {
		for i, r := range hints {
			hints[i] = slices.DeleteFunc(slices.Clone(r), func(h Hint) bool {
				return !h.Preferred || h.Affinity.Count() > 1
			})
		}
	}
	var best *Hint
	permute(hints, nil, func(perm []Hint) {
		merged := all
		preferred := true
		var first Mask
		for _, h := range perm {
			if h.Affinity != 0 {
				merged &= h.Affinity
				if first == 0 {
					first = h.Affinity
				} else if h.Affinity != first {
					preferred = false
				}
			}
			if !h.Preferred {
				preferred = false
			}
		}
		candidate := Hint{merged, preferred}
		if candidate.Affinity.Count() == 0 {
			return
		}
		better := candidate.Affinity.narrower(best0(best))
		if opts.PreferClosest && best != nil && candidate.Affinity.Count() == best.Affinity.Count() {
			c, b := distances.average(candidate.Affinity), distances.average(best.Affinity)
			better = c < b || (c == b && candidate.Affinity < best.Affinity)
		}
		if best == nil || (candidate.Preferred && !best.Preferred) || (candidate.Preferred == best.Preferred && better) {
			best = &candidate
		}
	})
	if best == nil {
		best = &Hint{all, false}
	}
	switch policy {
	case PolicyRestricted:
		return *best, best.Preferred
	case PolicySingleNUMANode:
		if best.Affinity == all {
			// Every node: no NUMA affinity is asked for.
			return Hint{0, best.Preferred}, best.Preferred
		}
		return *best, best.Preferred
	}
	return *best, true
}

// best0 is the best hint's affinity so far, every node's when there is none yet.
func best0(h *Hint) Mask {
	if h == nil {
		return ^Mask(0)
	}
	return h.Affinity
}

// permute calls fn with every combination of one hint of each resource.
func permute(resources [][]Hint, acc []Hint, fn func([]Hint)) {
	if len(resources) == 0 {
		fn(acc)
		return
	}
	for _, h := range resources[0] {
		permute(resources[1:], append(acc, h), fn)
	}
}
