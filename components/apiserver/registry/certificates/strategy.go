package certificates

import (
	"slices"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"

	orchcertificatesv1 "orch.io/orch/components/apis/certificates/v1"
	"orch.io/orch/components/authn"
)

// GroupVersion is certificates.orch.io/v1: Kubernetes' certificates.k8s.io/v1, renamed.
var GroupVersion = orchcertificatesv1.SchemeGroupVersion

// The signers orch knows (certificates/v1 names them for the server and the agent).
const (
	NodeClientSigner  = orchcertificatesv1.NodeClientSigner
	NodeServingSigner = orchcertificatesv1.NodeServingSigner
	ClientSigner      = orchcertificatesv1.ClientSigner
)

// Strategy is the rules of certificatesigningrequests. Clock stamps conditions.
type Strategy struct{ Clock clock.Clock }

func (Strategy) Resource() schema.GroupVersionResource {
	return GroupVersion.WithResource("certificatesigningrequests")
}
func (Strategy) Kind() string              { return "CertificateSigningRequest" }
func (Strategy) NamespaceScoped() bool     { return false }
func (Strategy) New() runtime.Object       { return &certificatesv1.CertificateSigningRequest{} }
func (Strategy) NewList() runtime.Object   { return &certificatesv1.CertificateSigningRequestList{} }
func (Strategy) AllowCreateOnUpdate() bool { return false }

// PrepareForCreate clears the status: nobody creates a request already approved or issued.
func (Strategy) PrepareForCreate(obj runtime.Object) {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	csr.Status = certificatesv1.CertificateSigningRequestStatus{}
}

// SetRequester records the requesting user in the spec, whatever the body said, as Kubernetes
// does: the approver decides from who asked, not from who the request claims asked.
func (Strategy) SetRequester(obj runtime.Object, user *authn.UserInfo) {
	spec := &obj.(*certificatesv1.CertificateSigningRequest).Spec
	spec.Username, spec.UID, spec.Groups, spec.Extra = "", "", nil, nil
	if user == nil {
		return
	}
	spec.Username, spec.UID, spec.Groups = user.Name, user.UID, slices.Clone(user.Groups)
	if len(user.Extra) > 0 {
		spec.Extra = map[string]certificatesv1.ExtraValue{}
		for k, v := range user.Extra {
			spec.Extra[k] = slices.Clone(v)
		}
	}
}

// PrepareForUpdate keeps spec and status: an update of the object changes its metadata only.
func (Strategy) PrepareForUpdate(obj, old runtime.Object) {
	n, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	n.Spec, n.Status = o.Spec, o.Status
}

func (Strategy) Validate(obj runtime.Object) field.ErrorList {
	return Validate(obj.(*certificatesv1.CertificateSigningRequest))
}

func (Strategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return ValidateUpdate(obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest))
}

func (Strategy) SelectableFields(obj runtime.Object) fields.Set {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	return fields.Set{"metadata.name": csr.Name, "spec.signerName": csr.Spec.SignerName}
}

// SelectableFieldNames are the field-selector keys of certificatesigningrequests.
var SelectableFieldNames = []string{"metadata.name", "spec.signerName"}

func (Strategy) Columns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: "Name must be unique within a namespace."},
		{Name: "Age", Type: "string", Description: "CreationTimestamp is a timestamp representing the server time when this object was created."},
		{Name: "SignerName", Type: "string", Description: "Only one of the signerName or the cert issuing CA should be used."},
		{Name: "Requestor", Type: "string", Description: "Name of the user that created the request."},
		{Name: "RequestedDuration", Type: "string", Description: "expirationSeconds is the requested duration of validity of the issued certificate."},
		{Name: "Condition", Type: "string", Description: "Conditions applied to the request, such as approval or denial."},
	}
}

func (Strategy) Row(obj runtime.Object, now time.Time) []any {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	requested := "<none>"
	if s := csr.Spec.ExpirationSeconds; s != nil {
		requested = duration.HumanDuration(time.Duration(*s) * time.Second)
	}
	return []any{csr.Name, duration.HumanDuration(now.Sub(csr.CreationTimestamp.Time)), csr.Spec.SignerName, csr.Spec.Username, requested, Condition(csr)}
}

// Condition is the request's state as kubectl shows it: Pending, Approved, Denied, Failed, with
// Issued once signed.
func Condition(csr *certificatesv1.CertificateSigningRequest) string {
	var states []string
	for _, c := range csr.Status.Conditions {
		if c.Status == corev1.ConditionTrue || c.Status == "" {
			states = append(states, string(c.Type))
		}
	}
	if len(states) == 0 {
		states = append(states, "Pending")
	}
	if len(csr.Status.Certificate) > 0 {
		states = append(states, "Issued")
	}
	return strings.Join(states, ",")
}

// StatusStrategy is certificatesigningrequests/status, the signer's: the certificate and
// conditions other than approval change; the spec, Approved and Denied stay.
type StatusStrategy struct{ Clock clock.Clock }

func (s StatusStrategy) PrepareForUpdate(obj, old runtime.Object) {
	n, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	n.Spec = o.Spec
	var conds []certificatesv1.CertificateSigningRequestCondition
	for _, c := range n.Status.Conditions {
		if !isApproval(c.Type) {
			conds = append(conds, c)
		}
	}
	for _, c := range o.Status.Conditions {
		if isApproval(c.Type) {
			conds = append(conds, c)
		}
	}
	n.Status.Conditions = conds
	stampConditions(n, o, s.Clock.Now())
}

func (StatusStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return ValidateUpdate(obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest))
}

// ApprovalStrategy is certificatesigningrequests/approval, the approver's: only the conditions
// change, never the spec nor the certificate.
type ApprovalStrategy struct{ Clock clock.Clock }

func (s ApprovalStrategy) PrepareForUpdate(obj, old runtime.Object) {
	n, o := obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest)
	n.Spec = o.Spec
	n.Status.Certificate = o.Status.Certificate
	stampConditions(n, o, s.Clock.Now())
}

func (ApprovalStrategy) ValidateUpdate(obj, old runtime.Object) field.ErrorList {
	return ValidateUpdate(obj.(*certificatesv1.CertificateSigningRequest), old.(*certificatesv1.CertificateSigningRequest))
}

func isApproval(t certificatesv1.RequestConditionType) bool {
	return t == certificatesv1.CertificateApproved || t == certificatesv1.CertificateDenied
}

// stampConditions fills the times a writer left empty, as Kubernetes does: lastUpdateTime now,
// lastTransitionTime kept from the same condition with the same status, else now.
func stampConditions(n, o *certificatesv1.CertificateSigningRequest, now time.Time) {
	t := metav1.NewTime(now.Truncate(time.Second))
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		if c.Status == "" {
			c.Status = corev1.ConditionTrue
		}
		if c.LastUpdateTime.IsZero() {
			c.LastUpdateTime = t
		}
		if !c.LastTransitionTime.IsZero() {
			continue
		}
		c.LastTransitionTime = t
		for _, oc := range o.Status.Conditions {
			if oc.Type == c.Type && oc.Status == c.Status && !oc.LastTransitionTime.IsZero() {
				c.LastTransitionTime = oc.LastTransitionTime
			}
		}
	}
}

// HasCondition tells whether csr has a condition of type t with status True.
func HasCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
