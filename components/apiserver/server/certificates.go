package server

import (
	csrcontroller "orch.io/orch/components/apiserver/controllers/certificates"
	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/apiserver/registry/certificates"
	"orch.io/orch/components/apiserver/registry/generic"
)

// Signing is the cluster's certificate authority, with which the server's signer issues the
// certificates of approved requests (kube-controller-manager's --cluster-signing-* options).
type Signing = csrcontroller.Signing

// csrStores are certificatesigningrequests and their status and approval subresources.
type csrStores struct {
	csrs, status, approval *generic.Store
}

// addCertificates serves certificates.orch.io/v1 and starts its controllers: the approver of node
// client requests, and the signer when c.Signing is set.
func (r *registry) addCertificates(c Config, newStore func(generic.Strategy) (*generic.Store, error)) error {
	csrs, err := newStore(certificates.Strategy{Clock: c.Clock})
	if err != nil {
		return err
	}
	approval := certificates.ApprovalStrategy{Clock: c.Clock}
	s := &csrStores{
		csrs: csrs, status: csrs.WithUpdates("status", certificates.StatusStrategy{Clock: c.Clock}),
		approval: certificates.ApprovalView(csrs, approval),
	}
	r.csrs = s
	r.groups = append(r.groups, endpoints.GroupVersion{GroupVersion: certificates.GroupVersion, Resources: []endpoints.Resource{
		{Store: csrs, Status: s.status, Singular: "certificatesigningrequest", ShortNames: []string{"csr"},
			SelectableFields: certificates.SelectableFieldNames,
			Subresources:     []endpoints.Subresource{certificates.NewApprovalREST(csrs, r.admission, approval).Subresource()}},
	}})
	return nil
}
