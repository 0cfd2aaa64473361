package scenario

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"orch.io/orch/sim"
)

// traceLine is a trace line: "HH:MM:SS.mmm node kind text" (hours may pass 99).
var traceLine = regexp.MustCompile(`^(\d{2,}):(\d{2}):(\d{2})\.(\d{3}) (\S+) (\S+) ?(.*)$`)

// ParseTrace reads the trace lines of a replay's output back into entries, in their order; lines
// that are not trace lines (a verdict, a problem) are skipped. Its text is the trace lines alone.
func ParseTrace(out string) (entries []sim.Entry, text string) {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		m := traceLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var at time.Duration
		for i, unit := range []time.Duration{time.Hour, time.Minute, time.Second, time.Millisecond} {
			n, _ := strconv.Atoi(m[i+1])
			at += time.Duration(n) * unit
		}
		entries = append(entries, sim.Entry{At: at, Seq: uint64(len(entries) + 1), Node: m[5], Kind: m[6], Text: m[7]})
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return entries, b.String()
}

// TraceRun is a run of s made elsewhere (another build's replay), from its output.
func TraceRun(s *Scenario, name string, seed int64, out string) (Run, error) {
	entries, text := ParseTrace(out)
	if len(entries) == 0 {
		return Run{}, fmt.Errorf("%s: the replay printed no trace lines", name)
	}
	r := &Result{Scenario: s, Seed: seed, Trace: text, Entries: entries}
	return Run{Set: OptionSet{Name: name}, Result: r, Summary: Summarize(entries, s.Duration.D())}, nil
}
