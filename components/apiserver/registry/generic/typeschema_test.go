package generic

import (
	"bytes"
	"testing"

	"orch.io/orch/components/apiserver/registry/generic/internal/typeschema"
)

// The committed schema must be what go generate makes from the client-go go.mod requires: a
// client-go upgrade, or a root added, regenerates it.
func TestTypeSchemaIsGenerated(t *testing.T) {
	want, err := typeschema.Generate()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal([]byte(typeSchemaYAML), want) {
		t.Fatal("typeschema.yaml is stale: run go generate ./components/apiserver/registry/generic")
	}
}
