package generic

import (
	_ "embed"
	"sync"

	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

//go:generate go run ./internal/typeschema/gen -o typeschema.yaml

// typeSchemaYAML is the structured-merge-diff schema of the Kubernetes types orch's kinds are
// typed with, cut from client-go's schema of every Kubernetes type: importing that (through
// applyconfigurations) linked every API group into the binary and parsed all of their schemas.
//
//go:embed typeschema.yaml
var typeSchemaYAML string

// typeSchema parses typeSchemaYAML on the first write that records managedFields, once for all
// stores.
var typeSchema = sync.OnceValues(func() (*typed.Parser, error) {
	return typed.NewParser(typed.YAMLObject(typeSchemaYAML))
})
