package sim

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Kinds of trace entries.
const (
	KindWorld  = "world"  // a change the timeline made: a manifest written, a fault injected
	KindSource = "source" // a source read, or a change to a node's desired pods
	KindCRI    = "cri"    // a CRI call and its result
	KindPod    = "pod"    // a pod's phase or container states changed, or it left the node
	KindEvent  = "event"  // an event written to the sink, or occurrences dropped by the rate limit
	KindNode   = "node"   // the node's pressure conditions changed
)

// Entry is one line of a trace.
type Entry struct {
	// At is simulated time since the world started.
	At time.Duration
	// Seq orders entries of one instant, in the order the driver read them.
	Seq  uint64
	Node string
	Kind string
	Text string
}

// String is the entry's trace line: "HH:MM:SS.mmm node kind text".
func (e Entry) String() string {
	return FormatOffset(e.At) + " " + e.Node + " " + e.Kind + " " + e.Text
}

// FormatOffset writes a simulated time as HH:MM:SS.mmm (hours grow past 99 if needed).
func FormatOffset(d time.Duration) string {
	var b [16]byte
	return string(appendOffset(b[:0], d))
}

// appendOffset appends FormatOffset(d) to b, its digits by hand: fmt boxed each of the four
// numbers, at every trace line and in the summary of every heartbeat's answer.
func appendOffset(b []byte, d time.Duration) []byte {
	ms := d.Milliseconds()
	if ms < 0 { // fmt's signs, as the trace always wrote them
		return fmt.Appendf(b, "%02d:%02d:%02d.%03d", ms/3600000, ms/60000%60, ms/1000%60, ms%1000)
	}
	if ms < 10*3600000 {
		b = append(b, '0')
	}
	b = strconv.AppendInt(b, ms/3600000, 10)
	return append(b, ':', digit(ms/600000%6), digit(ms/60000), ':', digit(ms/10000%6), digit(ms/1000), '.',
		digit(ms/100), digit(ms/10), digit(ms))
}

// digit is the last decimal digit of a non-negative n.
func digit(n int64) byte { return byte('0' + n%10) }

// Format renders entries one per line, in (At, Seq) order.
func Format(entries []Entry) string {
	sorted := append([]Entry(nil), entries...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].At != sorted[j].At {
			return sorted[i].At < sorted[j].At
		}
		return sorted[i].Seq < sorted[j].Seq
	})
	var b strings.Builder
	for _, e := range sorted {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}
