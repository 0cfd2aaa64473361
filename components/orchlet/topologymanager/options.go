package topologymanager

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// DefaultMaxNUMANodes is how many NUMA nodes a machine may have for a topology policy other
// than none, unless max-allowable-numa-nodes says more.
const DefaultMaxNUMANodes = 8

// Options are --topology-manager-policy-options.
type Options struct {
	// PreferClosest (prefer-closest-numa-nodes) breaks ties between hints of as many nodes by
	// the shortest average distance between their nodes.
	PreferClosest bool
	// MaxNUMANodes (max-allowable-numa-nodes) is how many NUMA nodes the machine may have.
	MaxNUMANodes int
}

// ParseOptions reads the options as the kubelet's NewPolicyOptions: prefer-closest-numa-nodes
// (stable, boolean), max-allowable-numa-nodes (beta, behind TopologyManagerPolicyBetaOptions, at
// least 8).
func ParseOptions(options map[string]string, enabled func(gate string) bool) (Options, error) {
	o := Options{MaxNUMANodes: DefaultMaxNUMANodes}
	for _, name := range slices.Sorted(maps.Keys(options)) {
		v := options[name]
		switch name {
		case "prefer-closest-numa-nodes":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return o, fmt.Errorf("bad value for option %q: %w", name, err)
			}
			o.PreferClosest = b
		case "max-allowable-numa-nodes":
			if !enabled("TopologyManagerPolicyBetaOptions") {
				return o, fmt.Errorf("topology manager policy beta-level options not enabled, but option %q provided", name)
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				return o, fmt.Errorf("unable to convert policy option to integer %q: %w", name, err)
			}
			if n < DefaultMaxNUMANodes {
				return o, fmt.Errorf("the minimum value of %q should not be less than %v", name, DefaultMaxNUMANodes)
			}
			o.MaxNUMANodes = n
		default:
			return o, fmt.Errorf("unknown Topology Manager Policy option: %q", name)
		}
	}
	return o, nil
}

// Distances are the NUMA nodes' distances from each other, by node (sysfs node<N>/distance).
type Distances map[int][]int

// average is the kubelet's CalculateAverageFor: the mean distance over every ordered pair of the
// mask's nodes, each with itself included.
func (d Distances) average(m Mask) float64 {
	nodes := m.Nodes()
	var sum, count float64
	for _, a := range nodes {
		for _, b := range nodes {
			if b < len(d[a]) {
				sum += float64(d[a][b])
			}
			count++
		}
	}
	if count == 0 {
		return 0
	}
	return sum / count
}
