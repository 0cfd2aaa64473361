package main

import (
	"testing"

	"orch.io/orch/cmd/internal/linkcheck"
)

// The server types managedFields with the schemas of its own kinds (registry/generic's
// typeschema.yaml): client-go's apply configurations, or its clientset, link every API group and
// parse the schemas of all of them: 17 MB of binary and 13 MiB resident (issue 17).
func TestBinaryLinksNoApplyConfigurations(t *testing.T) {
	linkcheck.NoHeavyDeps(t, "orch-apiserver")
}
