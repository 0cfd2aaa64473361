package certificates

// What each write leaves alone, as Kubernetes' csr strategies' GetResetFields say, and the
// subresources whose writes managedFields entries name.

func (Strategy) ResetFields() []string         { return []string{"status"} }
func (StatusStrategy) ResetFields() []string   { return []string{"spec", "status.conditions"} }
func (ApprovalStrategy) ResetFields() []string { return []string{"spec", "status.certificate"} }

func (StatusStrategy) Subresource() string   { return "status" }
func (ApprovalStrategy) Subresource() string { return "approval" }
