package certificates

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch.io/orch/components/apiserver/admission"
	"orch.io/orch/components/apiserver/registry/certificates"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// The plugins' names in the chain.
const (
	ApprovalPluginName           = "CertificateApproval"
	SigningPluginName            = "CertificateSigning"
	SubjectRestrictionPluginName = "CertificateSubjectRestriction"
)

var csrResource = certificates.GroupVersion.WithResource("certificatesigningrequests").GroupResource()

// Orch runs the three in the chain's mutating stage, where its store has always judged requests:
// a create before the object is validated, an update once the update's own rules hold. Kubernetes
// runs them as validating plugins.
var (
	_ admission.MutationInterface = Approval{}
	_ admission.MutationInterface = Signing{}
	_ admission.MutationInterface = SubjectRestriction{}
)

// Approval is CertificateApproval: a request's approval (the approval subresource, which admits
// the request before it writes) is by a user who may approve requests of its signer.
type Approval struct{ Authorizer authz.Authorizer }

func (Approval) Handles(op admission.Operation) bool { return op == admission.Update }

// Admit asks the authorizer about the stored request's signer, whatever the body says.
func (p Approval) Admit(ctx context.Context, a admission.Attributes) error {
	if a.Resource != csrResource || a.Subresource != "approval" || a.User == nil {
		return nil
	}
	current := a.OldObject.(*certificatesv1.CertificateSigningRequest)
	return authorizeSigner(ctx, p.Authorizer, a.User, "approve", a.Name, current.Spec.SignerName)
}

// Signing is CertificateSigning: a request's certificate is set (its status subresource) only by a
// user who may sign for its signer.
type Signing struct{ Authorizer authz.Authorizer }

func (Signing) Handles(op admission.Operation) bool { return op == admission.Update }

func (p Signing) Admit(ctx context.Context, a admission.Attributes) error {
	if a.Resource != csrResource || a.Subresource != "status" || a.User == nil {
		return nil
	}
	csr := a.Object.(*certificatesv1.CertificateSigningRequest)
	if bytes.Equal(csr.Status.Certificate, a.OldObject.(*certificatesv1.CertificateSigningRequest).Status.Certificate) {
		return nil
	}
	return authorizeSigner(ctx, p.Authorizer, a.User, "sign", csr.Name, csr.Spec.SignerName)
}

// SubjectRestriction is CertificateSubjectRestriction: nobody asks the API server client signer
// for a certificate in the system:masters group.
type SubjectRestriction struct{}

func (SubjectRestriction) Handles(op admission.Operation) bool { return op == admission.Create }

func (SubjectRestriction) Admit(_ context.Context, a admission.Attributes) error {
	if a.Resource != csrResource || a.Subresource != "" || a.User == nil {
		return nil
	}
	csr := a.Object.(*certificatesv1.CertificateSigningRequest)
	if csr.Spec.SignerName != certificates.ClientSigner {
		return nil
	}
	req, err := certificates.ParseCSR(csr.Spec.Request)
	if err != nil {
		return nil // validation names what is wrong with it
	}
	if slices.Contains(req.Subject.Organization, "system:masters") {
		return apierrors.NewForbidden(csrResource, csr.Name, fmt.Errorf("use of %s signer with system:masters group is not allowed", csr.Spec.SignerName))
	}
	return nil
}

// authorizeSigner asks whether user may verb (approve, sign) for signer: on the signers resource
// named signer, or its domain's wildcard <domain>/*, as Kubernetes does.
func authorizeSigner(ctx context.Context, authorizer authz.Authorizer, user *authn.UserInfo, verb, name, signer string) error {
	names := []string{signer}
	if domain, _, ok := strings.Cut(signer, "/"); ok {
		names = append(names, domain+"/*")
	}
	for _, n := range names {
		decision, _, err := authorizer.Authorize(ctx, authz.Attributes{
			User: user, Verb: verb, APIGroup: certificates.GroupVersion.Group, APIVersion: "*", Resource: "signers", Name: n, ResourceRequest: true,
		})
		if err == nil && decision == authz.DecisionAllow {
			return nil
		}
	}
	return apierrors.NewForbidden(csrResource, name, fmt.Errorf("user not permitted to %s requests with signerName %q", verb, signer))
}
