package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"orch.io/orch/conformance/catalog"
)

// The comparison counts passes on each side and lists a rule whose status differs, but not one the
// peer cannot be asked about.
func TestCompareResults(t *testing.T) {
	orch := RuleResults{Target: "orch", Rules: map[string]Status{"a": StatusPassed, "b": StatusPassed, "c": StatusPassed, "d": StatusFailed}}
	peer := RuleResults{Target: "peer", Rules: map[string]Status{"a": StatusPassed, "b": StatusFailed, "c": StatusNotApplicable, "d": StatusFailed},
		Details: map[string]string{"b": "status 422\nmore"}}
	c := Compare(orch, peer)
	want := Comparison{Rules: 4, PassedOrch: 3, PassedPeer: 1, PassedBoth: 1, NotApplicablePeer: 1, Differing: []string{"b: orch passed, peer failed: status 422"}}
	if fmt.Sprint(c) != fmt.Sprint(want) {
		t.Errorf("Compare = %+v, want %+v", c, want)
	}
}

// The report an implementer publishes says what the target provides, and for each rule not
// applicable why: the capability it lacks or the profile's reason.
func TestReportSaysWhyNotApplicable(t *testing.T) {
	rec := NewRecorder(io.Discard, nil)
	rec.Add(Outcome{Ref: "a.feature:3 asked", Rules: []string{"a.asked"}, Status: StatusPassed})
	rec.Add(Outcome{Ref: "a.feature:9 skipped", Rules: []string{"a.skipped"}, Status: StatusNotApplicable, Detail: "the target has no agent-events"})
	c := &catalog.Catalog{Rules: []catalog.Rule{{ID: "a.asked", Section: "S"}, {ID: "a.skipped", Section: "S"}}}
	provides := "target \"p\" provides:\n  agent            yes: the agent's options\n"
	path := filepath.Join(t.TempDir(), "conformance.md")
	if err := rec.WriteMarkdown(path, "p", provides, c, nil); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 rules: 1 passed, 0 failed, 1 not applicable", "```\n" + provides + "```\n",
		"| `a.skipped` | S | not applicable | a.feature:9 skipped (not applicable: the target has no agent-events) |"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the report lacks %q:\n%s", want, data)
		}
	}
}
