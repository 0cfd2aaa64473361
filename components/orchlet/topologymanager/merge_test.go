package topologymanager

import "testing"

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
