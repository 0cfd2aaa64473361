package certificates

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"
	certificatesv1 "k8s.io/api/certificates/v1"

	"orch.io/orch/components/apiserver/admission"
	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/authn"
)

var csrKind = GroupVersion.WithKind("CertificateSigningRequest")

// ApprovalREST is certificatesigningrequests/approval: only the conditions change, and only by a
// user who may approve requests of the request's signer (the CertificateApproval plugin).
type ApprovalREST struct {
	csrs, approval *generic.Store
	admission      generic.Admission
}

// NewApprovalREST serves the approval of the requests in csrs, judged by admit. The request is
// admitted before it writes, on the stored request's signer, so that a user who may not approve
// is told so first; the write is not admitted again.
func NewApprovalREST(csrs *generic.Store, admit generic.Admission, approval ApprovalStrategy) ApprovalREST {
	return ApprovalREST{csrs: csrs, approval: ApprovalView(csrs, approval), admission: admit}
}

// ApprovalView is the view of csrs through which approvals are written, by the approval
// subresource once it admitted the request, and by the server's approver.
func ApprovalView(csrs *generic.Store, approval ApprovalStrategy) *generic.Store {
	return csrs.WithUpdates("approval", approval).WithoutAdmission()
}

// Subresource describes certificatesigningrequests/approval to the endpoints.
func (a ApprovalREST) Subresource() endpoints.Subresource {
	return endpoints.Subresource{Name: "approval", Method: http.MethodPut, Verbs: []string{"update"}, Kind: csrKind.Kind,
		Handler: endpoints.BodyHandler(csrKind, a.update)}
}

func (a ApprovalREST) update(req *restful.Request, csr *certificatesv1.CertificateSigningRequest) (int, any, error) {
	ctx, name := req.Request.Context(), req.PathParameter("name")
	current, err := a.csrs.Get(ctx, "", name)
	if err != nil {
		return 0, nil, err
	}
	user, _ := authn.UserFrom(ctx)
	if err := a.admission.Admit(ctx, admission.Attributes{
		Operation: admission.Update, Kind: csrKind.GroupKind(), Resource: GroupVersion.WithResource("certificatesigningrequests").GroupResource(),
		Subresource: "approval", Name: name, Object: csr, OldObject: current, User: user,
	}); err != nil {
		return 0, nil, err
	}
	out, _, err := a.approval.Update(ctx, "", name, csr, len(req.Request.URL.Query()["dryRun"]) > 0)
	return http.StatusOK, out, err
}
