// Package report records what a conformance run proved, scenario by scenario and rule by rule, and
// writes it: the progress lines, reports/conformance.md, rules.json, and the comparison of two
// implementations' rules.json (make conformance-peers).
package report
