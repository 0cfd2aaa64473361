// Package catalog reads the executable spec: the rule catalog (features/rules.yaml) and the
// scenarios of the feature files, and judges the coverage gate, that every rule is proven by a
// scenario or a spec or is pending, and every step of a scenario has one definition with code.
package catalog
