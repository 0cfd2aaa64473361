package scenario

import (
	"fmt"
	"strings"
	"time"

	"orch.io/orch/sim"
)

// Outcome is a scenario's verdict for the report.
type Outcome struct {
	Scenario *Scenario
	Result   *Result // nil when the replay itself failed
	// Problems are unmet expectations, a golden mismatch or the replay's error.
	Problems []string
}

// Pass is true when the scenario replayed, met its expectations and matched its golden trace.
func (o Outcome) Pass() bool { return o.Result != nil && len(o.Problems) == 0 }

// Report is the markdown of reports/scenarios.md: each scenario, the rules it proves, pass or fail.
func Report(outs []Outcome) string {
	var b strings.Builder
	pass := 0
	for _, o := range outs {
		if o.Pass() {
			pass++
		}
	}
	fmt.Fprintf(&b, "# Scenarios\n\n%d of %d scenarios pass: each replayed in simulated time, its expectations met and its trace identical to its golden trace.\n\n", pass, len(outs))
	b.WriteString("| scenario | simulated | wall | trace lines | result |\n| --- | --- | --- | --- | --- |\n")
	for _, o := range outs {
		wall, lines := "-", "-"
		if o.Result != nil {
			wall = o.Result.Wall.Round(time.Millisecond).String()
			lines = fmt.Sprint(strings.Count(o.Result.Trace, "\n"))
		}
		verdict := "pass"
		if !o.Pass() {
			verdict = "**fail**"
		}
		fmt.Fprintf(&b, "| [%s](../%s) | %s | %s | %s | %s |\n", o.Scenario.Name, o.Scenario.Path, sim.FormatOffset(o.Scenario.Duration.D()), wall, lines, verdict)
	}
	for _, o := range outs {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n", o.Scenario.Name, strings.TrimSpace(o.Scenario.Description))
		if len(o.Scenario.Rules) > 0 {
			b.WriteString("Rules proved:\n\n")
			for _, r := range o.Scenario.Rules {
				fmt.Fprintf(&b, "- %s\n", r)
			}
			b.WriteString("\n")
		}
		if o.Pass() {
			b.WriteString("Result: pass.\n")
			continue
		}
		b.WriteString("Result: **fail**:\n\n")
		for _, p := range o.Problems {
			fmt.Fprintf(&b, "```\n%s\n```\n", strings.TrimSpace(p))
		}
	}
	return b.String()
}
