package storage

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// Whatever the adds and removals, merged on a LIST or because they piled up, the index lists
// exactly the map's keys in order.
func TestKeyIndexListsTheMapsKeysInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	present := map[string]int{}
	var x KeyIndex[int]
	for step := range 3 * minMerge {
		k := fmt.Sprintf("/k/%d", rng.IntN(2*minMerge))
		if _, ok := present[k]; ok && rng.IntN(3) == 0 {
			delete(present, k)
			x.Removed()
		} else if !ok {
			present[k] = step
			x.Add(k, present)
			if len(x.pending) > max(minMerge, len(x.keys)) {
				t.Fatalf("step %d: %d additions unmerged beside %d keys", step, len(x.pending), len(x.keys))
			}
		}
		// LISTs are rare enough for additions to pile up past minMerge between them.
		if step == 100 || step == 2*minMerge+17 || step == 3*minMerge-1 {
			want := make([]string, 0, len(present))
			for k := range present {
				want = append(want, k)
			}
			slices.Sort(want)
			if got := x.Sorted(present); !slices.Equal(got, want) {
				t.Fatalf("step %d: %d keys listed, want %d", step, len(got), len(want))
			}
		}
	}
}
