package core

// What each write leaves alone, as Kubernetes' strategies' GetResetFields say: an apply to a
// resource does not take its status, one to a status subresource not its spec.

func (NamespaceStrategy) ResetFields() []string       { return []string{"status"} }
func (NamespaceStatusStrategy) ResetFields() []string { return []string{"spec"} }
func (NodeStrategy) ResetFields() []string            { return []string{"status"} }
func (NodeStatusStrategy) ResetFields() []string      { return []string{"spec"} }
func (PodStrategy) ResetFields() []string             { return []string{"status"} }
func (PodStatusStrategy) ResetFields() []string {
	return []string{"spec", "metadata.deletionTimestamp", "metadata.ownerReferences"}
}

// The subresources whose writes managedFields entries name.

func (NamespaceStatusStrategy) Subresource() string   { return "status" }
func (NamespaceFinalizeStrategy) Subresource() string { return "finalize" }
func (NodeStatusStrategy) Subresource() string        { return "status" }
func (PodStatusStrategy) Subresource() string         { return "status" }
func (PodBindingStrategy) Subresource() string        { return "binding" }
