// Package config turns apiserver.config.orch.io/v1 files into checked configurations: it decodes them
// strictly, applies SPEC.md's defaults, validates every rule (collecting all problems with their field
// paths) and compiles their CEL expressions, keeping the programs for the components that enforce them.
package config
