package topologymanager

import (
	"strings"
	"testing"
)

// The kubelet's policies over one provider's hints (the CPU manager's) and over two: the best
// hint preferred first then narrowest, and each policy's verdict.
func TestMerge(t *testing.T) {
	nodes := []int{0, 1, 2, 3}
	two := []Hint{{MaskOf(0, 1), true}, {MaskOf(2, 3), true}, {MaskOf(0, 1, 2), false}}
	one := []Hint{{MaskOf(1), true}, {MaskOf(0, 1), false}}
	for _, tc := range []struct {
		name      string
		policy    string
		resources [][]Hint
		want      Hint
		admit     bool
	}{
		{"none admits everything", PolicyNone, [][]Hint{{}}, Hint{}, true},
		{"best-effort: the narrowest preferred", PolicyBestEffort, [][]Hint{two}, Hint{MaskOf(0, 1), true}, true},
		{"restricted: preferred admits", PolicyRestricted, [][]Hint{two}, Hint{MaskOf(0, 1), true}, true},
		{"single-numa-node: two nodes needed, refused", PolicySingleNUMANode, [][]Hint{two}, Hint{0, false}, false},
		{"single-numa-node: one node", PolicySingleNUMANode, [][]Hint{one}, Hint{MaskOf(1), true}, true},
		{"no preference anywhere", PolicySingleNUMANode, [][]Hint{nil}, Hint{0, true}, true},
		{"no node can satisfy: best-effort admits", PolicyBestEffort, [][]Hint{{}}, Hint{MaskOf(0, 1, 2, 3), false}, true},
		{"no node can satisfy: restricted refuses", PolicyRestricted, [][]Hint{{}}, Hint{MaskOf(0, 1, 2, 3), false}, false},
		{"two providers agreeing", PolicyRestricted, [][]Hint{one, {{MaskOf(1), true}, {MaskOf(1, 2), false}}}, Hint{MaskOf(1), true}, true},
		{"two providers disagreeing: not preferred", PolicyRestricted, [][]Hint{{{MaskOf(0), true}}, {{MaskOf(0, 1), true}}}, Hint{MaskOf(0), false}, false},
	} {
		got, admit := Merge(tc.policy, nodes, tc.resources)
		if got != tc.want || admit != tc.admit {
			t.Errorf("%s: %v %+v, want %v %+v", tc.name, admit, got, tc.admit, tc.want)
		}
	}
}

// prefer-closest-numa-nodes: of two preferred hints of two nodes, the one whose nodes are closer
// wins, where without it the lower nodes would.
func TestMergePreferClosest(t *testing.T) {
	nodes := []int{0, 1, 2, 3}
	// Nodes 0 and 1 are on different sockets here; 0 and 2 share one.
	distances := Distances{0: {10, 32, 11, 32}, 1: {32, 10, 32, 11}, 2: {11, 32, 10, 32}, 3: {32, 11, 32, 10}}
	hints := [][]Hint{{{MaskOf(0, 1), true}, {MaskOf(0, 2), true}}}
	if got, _ := MergeWith(PolicyRestricted, nodes, hints, Options{}, distances); got.Affinity != MaskOf(0, 1) {
		t.Errorf("without the option: %v, want the lower nodes {0,1}", got.Affinity)
	}
	if got, _ := MergeWith(PolicyRestricted, nodes, hints, Options{PreferClosest: true}, distances); got.Affinity != MaskOf(0, 2) {
		t.Errorf("prefer-closest-numa-nodes: %v, want the closer {0,2}", got.Affinity)
	}
}

// The options as the kubelet reads them.
func TestParseOptions(t *testing.T) {
	beta := func(g string) bool { return g == "TopologyManagerPolicyBetaOptions" }
	o, err := ParseOptions(map[string]string{"prefer-closest-numa-nodes": "true", "max-allowable-numa-nodes": "16"}, beta)
	if err != nil || !o.PreferClosest || o.MaxNUMANodes != 16 {
		t.Errorf("%+v, %v", o, err)
	}
	if o, _ := ParseOptions(nil, beta); o.MaxNUMANodes != 8 || o.PreferClosest {
		t.Errorf("defaults %+v", o)
	}
	for _, tc := range []struct {
		options map[string]string
		enabled func(string) bool
		want    string
	}{
		{map[string]string{"no-such": "1"}, beta, `unknown Topology Manager Policy option: "no-such"`},
		{map[string]string{"max-allowable-numa-nodes": "16"}, func(string) bool { return false }, `topology manager policy beta-level options not enabled, but option "max-allowable-numa-nodes" provided`},
		{map[string]string{"max-allowable-numa-nodes": "4"}, beta, `the minimum value of "max-allowable-numa-nodes" should not be less than 8`},
		{map[string]string{"prefer-closest-numa-nodes": "maybe"}, beta, `bad value for option "prefer-closest-numa-nodes"`},
	} {
		if _, err := ParseOptions(tc.options, tc.enabled); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.options, err, tc.want)
		}
	}
}
