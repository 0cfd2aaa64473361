package peerkubelet

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ReferenceCounts reads a capture such as ../shared/reference/kubelet-cri-call-counts.txt: lines
// "<count> /runtime.v1.<Service>/<Method>" (uniq -c output). Lines naming no CRI method (the capture's
// own stub) are skipped; a CRI line that does not parse is an error naming the line.
func ReferenceCounts(r io.Reader) (map[string]int, error) {
	counts := map[string]int{}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want \"<count> <method>\", got %q", n, sc.Text())
		}
		if !strings.HasPrefix(f[1], "/runtime.v1.") {
			continue
		}
		c, err := strconv.Atoi(f[0])
		if err != nil || c < 0 {
			return nil, fmt.Errorf("line %d: count %q is not a non-negative integer", n, f[0])
		}
		m := f[1][strings.LastIndexByte(f[1], '/')+1:]
		if m == "" {
			return nil, fmt.Errorf("line %d: %q names no method", n, f[1])
		}
		counts[m] += c
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(counts) == 0 {
		return nil, fmt.Errorf("no CRI method in the reference")
	}
	return counts, nil
}

// Periodic is the reference count from which a method counts as called on a period (relists,
// status polls, stats): its rate must then be within a factor of Tolerance of the reference's.
// Below it a method is called at start or per pod, and being called is all the shape says.
const (
	Periodic  = 5
	Tolerance = 2.0
)

// Row is one method of the comparison.
type Row struct {
	Method    string
	Reference int // calls in the reference's first minute (0: not in the reference)
	// FirstMinute counts the calls in the first minute after the kubelet's first call; Total those of
	// the whole run, PerMinute their rate.
	FirstMinute, Total int
	PerMinute          float64
	Failed             int    // calls answered with an error
	Problem            string // why the row breaks the reference's shape; empty if it holds
}

// Compare holds the measured calls against the reference: every method of the reference is called
// and none of its calls fails; a periodic method's first-minute count is within Tolerance of the
// reference's. Methods the reference does not list are reported too (they must not fail either).
// run is the measured duration from the first call; a run shorter than a minute scales its counts.
func Compare(ref map[string]int, firstMinute, total, failed map[string]int, run time.Duration) []Row {
	names := map[string]bool{}
	for _, m := range []map[string]int{ref, total, failed} {
		for k := range m {
			names[k] = true
		}
	}
	minutes := run.Minutes()
	scale := 1.0
	if minutes < 1 && minutes > 0 {
		scale = 1 / minutes
	}
	var rows []Row
	for m := range names {
		r := Row{Method: m, Reference: ref[m], FirstMinute: firstMinute[m], Total: total[m], Failed: failed[m]}
		if minutes > 0 {
			r.PerMinute = float64(r.Total) / minutes
		}
		first := float64(r.FirstMinute) * scale
		switch {
		case r.Failed > 0:
			r.Problem = fmt.Sprintf("%d of %d calls failed", r.Failed, r.Total)
		case r.Reference > 0 && r.Total == 0:
			r.Problem = "never called"
		case r.Reference >= Periodic && (first < float64(r.Reference)/Tolerance || first > float64(r.Reference)*Tolerance):
			r.Problem = fmt.Sprintf("%.0f in the first minute, outside %.0f-%.0f (the reference's %d within a factor of %g)",
				first, float64(r.Reference)/Tolerance, float64(r.Reference)*Tolerance, r.Reference, Tolerance)
		}
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Reference != rows[j].Reference {
			return rows[i].Reference > rows[j].Reference
		}
		if rows[i].Total != rows[j].Total {
			return rows[i].Total > rows[j].Total
		}
		return rows[i].Method < rows[j].Method
	})
	return rows
}

// Table renders rows as a Markdown table.
func Table(rows []Row) string {
	var b strings.Builder
	b.WriteString("| method | reference, first minute | measured, first minute | measured, whole run | per minute | failed | shape |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rows {
		ref := "-"
		if r.Reference > 0 {
			ref = strconv.Itoa(r.Reference)
		}
		shape := "holds"
		if r.Problem != "" {
			shape = "**" + r.Problem + "**"
		} else if r.Reference == 0 {
			shape = "not in the reference"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %.1f | %d | %s |\n", r.Method, ref, r.FirstMinute, r.Total, r.PerMinute, r.Failed, shape)
	}
	return b.String()
}
