package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadCatalogReportsEveryMistake(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(path, []byte(`rules:
- {id: a.one, section: S, statement: x}
- {id: a.one, section: S, statement: y}
- {id: orch.a.two, section: S, statement: z}
- {id: a.three, section: S, statement: w, orch: true}
pending:
- {since: "2026-11-22", issue: later, rules: [a.missing, a.one, a.one]}
- {rules: [a.three]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadCatalog(path)
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{`duplicate id "a.one"`, `rule "orch.a.two": orch: true`, `rule "a.three": orch: true`,
		`"a.missing" is not a catalog rule`, `"a.one" is listed twice`, "pending[1]: since and issue are required"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestCheckCoverageFindsEveryGap(t *testing.T) {
	c := &Catalog{
		Rules:   []Rule{{ID: "a.proven"}, {ID: "a.bare"}, {ID: "a.parked"}, {ID: "a.parked-but-proven"}, {ID: "b.spec"}},
		Pending: []PendingGroup{{Since: "2026-11-22", Issue: "later", Rules: []string{"a.parked", "a.parked-but-proven"}}},
	}
	scenarios := []Scenario{
		{Feature: "a.feature", Name: "one", Line: 3, Tags: []string{"@component:x", "@component:y", "@rule:a.proven", "@rule:a.unknown"}, Steps: []string{"a step", "an undefined step"}},
		{Feature: "a.feature", Name: "two", Line: 9, Tags: []string{"@rule:a.parked-but-proven"}, Steps: []string{"a twin step"}},
	}
	defs := []StepDef{
		{Expr: `^a step$`, HasCode: true},
		{Expr: `^a twin step$`, HasCode: true},
		{Expr: `^a twin (step)$`, HasCode: true},
		{Expr: `^a step without code$`},
	}
	cov := CheckCoverage(c, scenarios, map[string][]string{"b.spec": {"x_test.go"}, "b.unknown": {"x_test.go"}}, defs, []string{"y"})
	got := strings.Join(cov.Problems, "\n")
	for _, want := range []string{
		`rule "a.bare" has no scenario and is not pending`,
		`rule "a.parked-but-proven" has a scenario: move it out of the pending list`,
		`a.feature:3 one: tag names unknown rule "a.unknown"`,
		`a.feature:3 one: step "an undefined step" is undefined`,
		`a.feature:9 two: step "a twin step" matches 2 definitions`,
		`a.feature:9 two: names no component`,
		`a.feature:3 one: names component "x", which no profile can provide`,
		`step "^a step without code$" is pending`,
		`ginkgo label names unknown rule "b.unknown"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"a.parked" has`) || strings.Contains(got, `"b.spec" has`) || strings.Contains(got, `component "y"`) {
		t.Errorf("a pending rule, a rule proven by a spec or a component a profile provides was flagged:\n%s", got)
	}
	if a := cov.Areas[0]; a.Area != "a" || a.Total != 4 || a.Covered != 2 || a.Pending != 1 {
		t.Errorf("area a: %+v", a)
	}
}
