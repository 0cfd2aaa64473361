// Package conformance runs the executable spec of SPEC.md (the rule catalog and feature files under
// features/) against a target implementation described by a profile, and checks that every catalog
// rule is proven by a scenario.
//
// Steps reach the implementation only through its public surfaces: HTTPS for the API server, the
// command line and files for the node agent and the configuration checker. A profile under
// targets/ says how to start or reach each surface and how the implementation spells its names, so
// the same steps test another implementation without code changes.
//
// This package holds the step definitions and the suite's entry point (the tests make conformance
// and make coverage run); the rule catalog and the coverage gate are in catalog, the profiles made
// live in target, and what a run proved in report.
package conformance
