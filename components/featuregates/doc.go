// Package featuregates knows every feature gate of SPEC.md with its stage and default, parses the
// `--feature-gates` option and a configuration file's featureGates map, and answers which gates are on.
//
// AllAlpha and AllBeta switch every gate of their stage that was not named explicitly, whatever the
// order in which the names were given, as Kubernetes components do.
package featuregates
