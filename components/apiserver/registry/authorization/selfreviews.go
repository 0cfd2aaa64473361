package authorization

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// SelfSubjectAccessReviewREST is selfsubjectaccessreviews: whether the requesting user may do what
// the spec describes (kubectl auth can-i).
type SelfSubjectAccessReviewREST struct {
	Authorizer authz.Authorizer
}

var ssarKind = authz.SubjectAccessReviewGroupVersion.WithKind("SelfSubjectAccessReview")

// Create is the route answering a SelfSubjectAccessReview.
func (rv SelfSubjectAccessReviewREST) Create() restful.RouteFunction {
	return endpoints.CreateHandler(ssarKind, rv.review)
}

func (rv SelfSubjectAccessReviewREST) review(req *restful.Request, _ http.ResponseWriter, review *authorizationv1.SelfSubjectAccessReview) (*authorizationv1.SelfSubjectAccessReview, error) {
	spec := review.Spec
	errs := append(validateAttributes(field.NewPath("spec"), spec.ResourceAttributes, spec.NonResourceAttributes), emptyMetadata(review.ObjectMeta)...)
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(ssarKind.GroupKind(), "", errs)
	}
	user, ok := authn.UserFrom(req.Request.Context())
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	review.Status = decide(req.Request.Context(), rv.Authorizer, user, spec.ResourceAttributes, spec.NonResourceAttributes)
	return review, nil
}

// SelfSubjectRulesReviewREST is selfsubjectrulesreviews: what the requesting user may do in a
// namespace, as the authorizers list it (kubectl auth can-i --list).
type SelfSubjectRulesReviewREST struct {
	Authorizer authz.Authorizer
}

var ssrrKind = authz.SubjectAccessReviewGroupVersion.WithKind("SelfSubjectRulesReview")

// Create is the route answering a SelfSubjectRulesReview.
func (rv SelfSubjectRulesReviewREST) Create() restful.RouteFunction {
	return endpoints.CreateHandler(ssrrKind, rv.review)
}

func (rv SelfSubjectRulesReviewREST) review(req *restful.Request, _ http.ResponseWriter, review *authorizationv1.SelfSubjectRulesReview) (*authorizationv1.SelfSubjectRulesReview, error) {
	user, ok := authn.UserFrom(req.Request.Context())
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if review.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	rules, err := authz.RulesFor(req.Request.Context(), rv.Authorizer, user, review.Spec.Namespace)
	out := &authorizationv1.SelfSubjectRulesReview{
		Spec: review.Spec,
		Status: authorizationv1.SubjectRulesReviewStatus{
			ResourceRules: rules.Resource, NonResourceRules: rules.NonResource, Incomplete: rules.Incomplete,
		},
	}
	// Kubernetes answers empty lists, not absent ones.
	if out.Status.ResourceRules == nil {
		out.Status.ResourceRules = []authorizationv1.ResourceRule{}
	}
	if out.Status.NonResourceRules == nil {
		out.Status.NonResourceRules = []authorizationv1.NonResourceRule{}
	}
	if err != nil {
		out.Status.EvaluationError = err.Error()
	}
	return out, nil
}

// emptyMetadata is Kubernetes' rule for reviews: they are not stored, so they carry no metadata.
func emptyMetadata(m metav1.ObjectMeta) field.ErrorList {
	m.ManagedFields = nil
	if !apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, m) {
		return field.ErrorList{field.Invalid(field.NewPath("metadata"), m, "must be empty")}
	}
	return nil
}
