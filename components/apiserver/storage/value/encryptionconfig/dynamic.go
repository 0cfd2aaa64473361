package encryptionconfig

import (
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch.io/orch/components/apiserver/storage/value"
)

// Dynamic is the configuration in force, swapped whole when the file is reloaded. Lookups take no
// lock: they are on every storage operation.
type Dynamic struct {
	current atomic.Pointer[Transformers]
}

// NewDynamic starts with t in force.
func NewDynamic(t *Transformers) *Dynamic {
	d := &Dynamic{}
	d.current.Store(t)
	return d
}

// TransformerFor is the resource's transformer in the configuration in force.
func (d *Dynamic) TransformerFor(gr schema.GroupResource) value.Transformer {
	return d.current.Load().TransformerFor(gr)
}

// HealthChecks are the checks of the configuration in force.
func (d *Dynamic) HealthChecks() []HealthCheck { return d.current.Load().HealthChecks() }

// Set puts t in force and returns the configuration it replaces, which the caller stops once no
// operation can still be using it.
func (d *Dynamic) Set(t *Transformers) *Transformers { return d.current.Swap(t) }

// Stop stops the configuration in force.
func (d *Dynamic) Stop() { d.current.Load().Stop() }
