package fakecri

import (
	"strconv"
	"testing"
)

// TestCountText holds the made-once answers of the list calls to the concatenation they stand for,
// at the table's edges and past them, for every noun the list calls count and one they do not.
func TestCountText(t *testing.T) {
	for _, noun := range []string{"items", "containers", "images", "pods", "stats", "other"} {
		for _, n := range []int{0, 1, 9, 10, 31, 32, 1000} {
			if got, want := countText(noun, n), noun+"="+strconv.Itoa(n); got != want {
				t.Errorf("countText(%q, %d) = %q, want %q", noun, n, got, want)
			}
		}
	}
	if a := testing.AllocsPerRun(100, func() { _ = countText("items", 3) }); a != 0 {
		t.Errorf("countText(items, 3) made %v allocations, want none", a)
	}
}
