package scenario

import (
	"fmt"
	"strings"
)

// context is how many unchanged lines a diff shows around each change.
const context = 3

// maxCells bounds the longest-common-subsequence table; past it, the changed middle is shown as
// removed and added whole.
const maxCells = 4_000_000

type op struct {
	kind byte // ' ', '-', '+'
	line string
	a, b int // line numbers (from 1) in want and got
}

// Diff is a line diff of want (the golden trace) and got, in the unified style: "-" lines only in
// the golden trace, "+" lines only in this run, with a few unchanged lines around each change.
func Diff(want, got string) string {
	a := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	b := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	ops := editScript(a, b)
	var out strings.Builder
	fmt.Fprintf(&out, "--- golden (%d lines)\n+++ this run (%d lines)\n", len(a), len(b))
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-context, 0)
		end := i
		// Extend the hunk while changes are closer than two contexts apart.
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j
			} else if j-end > 2*context {
				break
			}
		}
		end = min(end+context+1, len(ops))
		fmt.Fprintf(&out, "@@ golden line %d, this run line %d @@\n", ops[start].a, ops[start].b)
		for _, o := range ops[start:end] {
			out.WriteByte(o.kind)
			out.WriteByte(' ')
			out.WriteString(o.line)
			out.WriteByte('\n')
		}
		i = end
	}
	return out.String()
}

func editScript(a, b []string) []op {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []op
	for i := 0; i < pre; i++ {
		ops = append(ops, op{' ', a[i], i + 1, i + 1})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	if len(ma)*len(mb) <= maxCells {
		ops = append(ops, lcs(ma, mb, pre)...)
	} else {
		for i, l := range ma {
			ops = append(ops, op{'-', l, pre + i + 1, pre + 1})
		}
		for j, l := range mb {
			ops = append(ops, op{'+', l, pre + len(ma) + 1, pre + j + 1})
		}
	}
	for k := 0; k < suf; k++ {
		i, j := len(a)-suf+k, len(b)-suf+k
		ops = append(ops, op{' ', a[i], i + 1, j + 1})
	}
	return ops
}

// lcs diffs a and b (which start at line off+1) by their longest common subsequence.
func lcs(a, b []string, off int) []op {
	n, m := len(a), len(b)
	t := make([][]int32, n+1)
	for i := range t {
		t[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && a[i] == b[j]:
			ops = append(ops, op{' ', a[i], off + i + 1, off + j + 1})
			i++
			j++
		case i < n && (j == m || t[i+1][j] >= t[i][j+1]):
			// Removals before additions, as unified diffs show a changed line.
			ops = append(ops, op{'-', a[i], off + i + 1, off + j + 1})
			i++
		default:
			ops = append(ops, op{'+', b[j], off + i + 1, off + j + 1})
			j++
		}
	}
	return ops
}
