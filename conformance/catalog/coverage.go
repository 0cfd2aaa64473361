package catalog

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
)

// AreaCount is the coverage of one area of the catalog.
type AreaCount struct {
	Area    string
	Covered int // rules with at least one scenario or spec
	Pending int // rules in the pending list
	Total   int
}

// Coverage is what the coverage check found.
type Coverage struct {
	Areas []AreaCount
	// Proofs maps a rule id to the scenarios and specs tagged with it.
	Proofs map[string][]string
	// Problems are the reasons the check fails; empty when it passes.
	Problems []string
}

// ruleLabelsCall finds the rules of ginkgo specs, labelled through ruleLabels("<id>", ...).
var (
	ruleLabelsCall = regexp.MustCompile(`ruleLabels\(([^)]*)\)`)
	quotedID       = regexp.MustCompile(`"([A-Za-z0-9.\-]+)"`)
)

// GinkgoRules returns, per rule id, the Go files under dir whose ginkgo specs are labelled with it.
func GinkgoRules(dir string) (map[string][]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		for _, call := range ruleLabelsCall.FindAllStringSubmatch(string(data), -1) {
			for _, m := range quotedID.FindAllStringSubmatch(call[1], -1) {
				out[m[1]] = appendOnce(out[m[1]], filepath.Base(path)+" (ginkgo)")
			}
		}
	}
	return out, nil
}

// StepDef is a step definition as the coverage check reads it: its expression, and whether it has
// code to run.
type StepDef struct {
	Expr    string
	HasCode bool
}

// CheckCoverage fails when a catalog rule has neither a scenario nor a pending entry, a pending rule
// already has one (the list only shrinks), a tag names an unknown rule, a scenario names no rule or
// a component other than those given (the capabilities a profile can provide), or a step has no
// definition, more than one, or a definition without code.
func CheckCoverage(c *Catalog, scenarios []Scenario, specs map[string][]string, defs []StepDef, components []string) *Coverage {
	cov := &Coverage{Proofs: map[string][]string{}}
	known := map[string]bool{}
	for _, r := range c.Rules {
		known[r.ID] = true
	}
	problem := func(format string, args ...any) { cov.Problems = append(cov.Problems, fmt.Sprintf(format, args...)) }

	exprs := make([]*regexp.Regexp, len(defs))
	for i, d := range defs {
		exprs[i] = regexp.MustCompile(d.Expr)
		if !d.HasCode {
			problem("step %q is pending: it has no code", d.Expr)
		}
	}
	for _, s := range scenarios {
		if len(s.Rules()) == 0 {
			problem("%s: names no rule (tag it %s<id>)", s.Ref(), RuleTagPrefix)
		}
		if len(s.Components()) == 0 {
			problem("%s: names no component (tag it %s<name>)", s.Ref(), ComponentTagPrefix)
		}
		for _, c := range s.Components() {
			if !slices.Contains(components, c) {
				problem("%s: names component %q, which no profile can provide (conformance/TARGETS.md lists them)", s.Ref(), c)
			}
		}
		for _, id := range s.Rules() {
			if !known[id] {
				problem("%s: tag names unknown rule %q", s.Ref(), id)
				continue
			}
			cov.Proofs[id] = appendOnce(cov.Proofs[id], s.Ref())
		}
		for _, text := range s.Steps {
			n := 0
			for _, re := range exprs {
				if re.MatchString(text) {
					n++
				}
			}
			switch {
			case n == 0:
				problem("%s: step %q is undefined", s.Ref(), text)
			case n > 1:
				problem("%s: step %q matches %d definitions", s.Ref(), text, n)
			}
		}
	}
	for id, files := range specs {
		if !known[id] {
			problem("ginkgo label names unknown rule %q (%s)", id, files[0])
			continue
		}
		for _, f := range files {
			cov.Proofs[id] = appendOnce(cov.Proofs[id], f)
		}
	}

	counts := map[string]*AreaCount{}
	for _, r := range c.Rules {
		a := Area(r.ID)
		if counts[a] == nil {
			counts[a] = &AreaCount{Area: a}
		}
		ac := counts[a]
		ac.Total++
		proven := len(cov.Proofs[r.ID]) > 0
		g := c.PendingGroupOf(r.ID)
		switch {
		case proven && g != nil:
			ac.Covered++
			problem("rule %q has a scenario: move it out of the pending list (%s)", r.ID, g.Issue)
		case proven:
			ac.Covered++
		case g != nil:
			ac.Pending++
		default:
			problem("rule %q has no scenario and is not pending", r.ID)
		}
	}
	for _, a := range c.Areas() {
		cov.Areas = append(cov.Areas, *counts[a])
	}
	sort.Strings(cov.Problems)
	return cov
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
