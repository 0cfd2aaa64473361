// Package config turns apiserver.config.orch.io/v1 files into checked configurations: it decodes them
// strictly, applies SPEC.md's defaults, validates every rule (collecting all problems with their field
// paths) and compiles their CEL expressions, keeping the programs for the components that enforce them.
// It sits beside the types it reads, below the API server and the authenticators and authorizers
// that enforce the files, so each of them can load its own kind.
package config
