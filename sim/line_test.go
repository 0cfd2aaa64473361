package sim

import (
	"fmt"
	"testing"
)

// TestLine holds a node's kept call lines to the bytes they were made from: the same text after its
// buffer is written over, a timed call's line never kept, the kept ones bounded, and a kept line
// handed out again without an allocation.
func TestLine(t *testing.T) {
	n := &Node{lines: map[string]string{}}
	buf := []byte("ListPodSandbox  -> OK items=0")
	first := n.line(buf, false)
	copy(buf, "ListContainers ")
	if first != "ListPodSandbox  -> OK items=0" {
		t.Fatalf("a kept line changed with its buffer: %q", first)
	}
	for _, c := range []struct {
		text  string
		timed bool
		kept  bool
	}{
		{"ListPodSandbox  -> OK items=0", false, true},
		{"ListContainers  -> OK containers=0", false, true},
		{"PullImage -> OK after 1.5s", true, false},
		{"ImageFsInfo  -> OK", false, true},
	} {
		got := n.line([]byte(c.text), c.timed)
		if got != c.text {
			t.Errorf("line(%q, %v) = %q", c.text, c.timed, got)
		}
		if _, ok := n.lines[c.text]; ok != c.kept {
			t.Errorf("line(%q, %v): kept %v, want %v", c.text, c.timed, ok, c.kept)
		}
	}
	for i := range 3 * maxLines {
		text := fmt.Sprintf("RemoveContainer c%d -> OK", i)
		if got := n.line([]byte(text), false); got != text {
			t.Fatalf("line(%q) = %q", text, got)
		}
		if len(n.lines) > maxLines {
			t.Fatalf("%d lines kept, want at most %d", len(n.lines), maxLines)
		}
	}
	again := []byte("ListPodSandbox  -> OK items=0")
	n.line(again, false)
	if a := testing.AllocsPerRun(100, func() { n.line(again, false) }); a != 0 {
		t.Errorf("a kept line made %v allocations, want none", a)
	}
}
