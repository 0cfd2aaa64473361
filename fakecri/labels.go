package fakecri

import "slices"

// labelIndex lists objects by each of their labels, oldest first, so a List call filtered by a
// label (a node agent's lookup of one pod) reads one bucket instead of every object.
type labelIndex[T comparable] map[string][]T

func labelKey(k, v string) string { return k + "\x00" + v }

func (ix labelIndex[T]) add(labels map[string]string, o T) {
	for k, v := range labels {
		key := labelKey(k, v)
		ix[key] = append(ix[key], o)
	}
}

func (ix labelIndex[T]) remove(labels map[string]string, o T) {
	for k, v := range labels {
		key := labelKey(k, v)
		b := ix[key]
		if i := slices.Index(b, o); i >= 0 {
			b = slices.Delete(b, i, i+1)
		}
		if len(b) == 0 {
			delete(ix, key)
		} else {
			ix[key] = b
		}
	}
}

// candidates is the smallest bucket the selector's labels name, a superset of what the selector
// matches, oldest first; false when the selector is empty and every object is a candidate.
func (ix labelIndex[T]) candidates(sel map[string]string) ([]T, bool) {
	if len(sel) == 0 {
		return nil, false
	}
	var best []T
	first := true
	for k, v := range sel {
		if b := ix[labelKey(k, v)]; first || len(b) < len(best) {
			best, first = b, false
		}
	}
	return best, true
}
