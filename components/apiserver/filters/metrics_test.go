package filters

import (
	"strconv"
	"testing"
)

// A code's label is its decimal text, made once for the codes HTTP has and at each use for others.
func TestCodeLabel(t *testing.T) {
	for _, code := range []int{-1, 0, 7, 99, 100, 200, 201, 404, 429, 599, 600, 1000} {
		if got, want := codeLabel(code), strconv.Itoa(code); got != want {
			t.Errorf("codeLabel(%d) = %q, want %q", code, got, want)
		}
	}
	if n := testing.AllocsPerRun(10, func() { _ = codeLabel(200) }); n != 0 {
		t.Errorf("codeLabel(200) allocated %v times", n)
	}
}
