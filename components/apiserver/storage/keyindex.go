package storage

import "slices"

// minMerge is how many additions a KeyIndex holds unmerged however few keys it has.
const minMerge = 4096

// KeyIndex keeps the keys of a map in order for LISTs without making writes pay for the order:
// additions are batched and merged when a LIST needs the order, or when they outnumber the
// merged keys, which bounds them between LISTs at O(log n) amortised a write. Inserting into a
// sorted slice instead moves half of it on each new key, which at a hundred thousand keys costs
// more than the rest of a create.
type KeyIndex[V any] struct {
	keys    []string
	pending []string
	stale   bool // keys may name keys gone from the map
}

// Add records key, new in present.
func (x *KeyIndex[V]) Add(key string, present map[string]V) {
	x.pending = append(x.pending, key)
	if len(x.pending) > max(minMerge, len(x.keys)) {
		x.Sorted(present)
	}
}

// Removed records that a key left the map.
func (x *KeyIndex[V]) Removed() { x.stale = true }

// Reset makes keys, already sorted, the index.
func (x *KeyIndex[V]) Reset(keys []string) {
	clear(x.pending)
	x.keys, x.pending, x.stale = keys, x.pending[:0], false
}

// Sorted returns the keys of present in order; the caller must not modify the slice.
func (x *KeyIndex[V]) Sorted(present map[string]V) []string {
	if len(x.pending) == 0 && !x.stale {
		return x.keys
	}
	slices.Sort(x.pending)
	out := make([]string, 0, len(x.keys)+len(x.pending))
	push := func(k string) {
		if _, ok := present[k]; !ok {
			return
		}
		if n := len(out); n > 0 && out[n-1] == k {
			return
		}
		out = append(out, k)
	}
	i, j := 0, 0
	for i < len(x.keys) || j < len(x.pending) {
		if j == len(x.pending) || (i < len(x.keys) && x.keys[i] <= x.pending[j]) {
			push(x.keys[i])
			i++
		} else {
			push(x.pending[j])
			j++
		}
	}
	x.Reset(out)
	return x.keys
}
