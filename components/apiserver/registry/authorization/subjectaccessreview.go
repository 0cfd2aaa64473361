package authorization

import (
	"context"
	"net/http"

	restful "github.com/emicklei/go-restful/v3"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// SubjectAccessReviewREST is subjectaccessreviews: it asks the server's authorizer whether the
// user of the spec may do what it describes, as Kubernetes' SubjectAccessReview does.
type SubjectAccessReviewREST struct {
	Authorizer authz.Authorizer
}

var sarKind = authz.SubjectAccessReviewGroupVersion.WithKind("SubjectAccessReview")

// Create is the route answering a SubjectAccessReview.
func (rv SubjectAccessReviewREST) Create() restful.RouteFunction {
	return endpoints.CreateHandler(sarKind, rv.review)
}

func (rv SubjectAccessReviewREST) review(req *restful.Request, _ http.ResponseWriter, review *authorizationv1.SubjectAccessReview) (*authorizationv1.SubjectAccessReview, error) {
	status, err := reviewSubject(req.Request.Context(), rv.Authorizer, sarKind, review.Spec, emptyMetadata(review.ObjectMeta))
	review.Status = status
	return review, err
}

// reviewSubject answers a review of the subject its spec names, the SubjectAccessReview's and the
// LocalSubjectAccessReview's: the spec validated, with the kind's own errors beside, then the
// authorizer asked.
func reviewSubject(ctx context.Context, a authz.Authorizer, kind schema.GroupVersionKind, spec authorizationv1.SubjectAccessReviewSpec, kindErrs field.ErrorList) (authorizationv1.SubjectAccessReviewStatus, error) {
	if errs := append(validateSpec(spec), kindErrs...); len(errs) > 0 {
		return authorizationv1.SubjectAccessReviewStatus{}, apierrors.NewInvalid(kind.GroupKind(), "", errs)
	}
	return decide(ctx, a, subject(spec), spec.ResourceAttributes, spec.NonResourceAttributes), nil
}

// decide asks a whether user may do what the attributes (one of them set) describe, and words the
// answer as a review's status.
func decide(ctx context.Context, a authz.Authorizer, user *authn.UserInfo, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	attrs := authz.Attributes{User: user}
	if ra != nil {
		attrs.Verb, attrs.Namespace, attrs.Name = ra.Verb, ra.Namespace, ra.Name
		attrs.APIGroup, attrs.APIVersion, attrs.Resource, attrs.Subresource = ra.Group, ra.Version, ra.Resource, ra.Subresource
		attrs.ResourceRequest = true
	} else {
		attrs.Verb, attrs.Path = nra.Verb, nra.Path
	}
	decision, reason, err := a.Authorize(ctx, attrs)
	status := authorizationv1.SubjectAccessReviewStatus{
		Allowed: decision == authz.DecisionAllow, Denied: decision == authz.DecisionDeny, Reason: reason,
	}
	if err != nil {
		status.EvaluationError = err.Error()
	}
	return status
}

// subject is the user a review's spec asks about.
func subject(spec authorizationv1.SubjectAccessReviewSpec) *authn.UserInfo {
	user := &authn.UserInfo{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	for k, v := range spec.Extra {
		if user.Extra == nil {
			user.Extra = map[string][]string{}
		}
		user.Extra[k] = v
	}
	return user
}

// validateSpec is Kubernetes' ValidateSubjectAccessReviewSpec: exactly one kind of attributes,
// and a user or a group.
func validateSpec(spec authorizationv1.SubjectAccessReviewSpec) field.ErrorList {
	path := field.NewPath("spec")
	errs := validateAttributes(path, spec.ResourceAttributes, spec.NonResourceAttributes)
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(path.Child("user"), spec.User, "at least one of user or group must be specified"))
	}
	return errs
}

// validateAttributes is the rule every access review's spec keeps: exactly one kind of attributes.
func validateAttributes(path *field.Path, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) field.ErrorList {
	switch {
	case ra != nil && nra != nil:
		return field.ErrorList{field.Invalid(path.Child("nonResourceAttributes"), nra, "cannot be specified in combination with resourceAttributes")}
	case ra == nil && nra == nil:
		return field.ErrorList{field.Invalid(path.Child("resourceAttributes"), nra, "exactly one of nonResourceAttributes or resourceAttributes must be specified")}
	}
	return nil
}
