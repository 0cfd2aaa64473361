package authorization

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/authz"
)

// LocalSubjectAccessReviewREST is namespaces/{namespace}/localsubjectaccessreviews: a
// SubjectAccessReview confined to one namespace, so that a namespace's admin (the admin role
// grants it) may ask about its users without asking about the whole cluster.
type LocalSubjectAccessReviewREST struct {
	Authorizer authz.Authorizer
}

var lsarKind = authz.SubjectAccessReviewGroupVersion.WithKind("LocalSubjectAccessReview")

// Create is the route answering a LocalSubjectAccessReview; the route names the namespace.
func (rv LocalSubjectAccessReviewREST) Create() restful.RouteFunction {
	return endpoints.CreateHandler(lsarKind, rv.review)
}

func (rv LocalSubjectAccessReviewREST) review(req *restful.Request, _ http.ResponseWriter, review *authorizationv1.LocalSubjectAccessReview) (*authorizationv1.LocalSubjectAccessReview, error) {
	namespace := req.PathParameter("namespace")
	// Kubernetes' create handler: the object takes the request's namespace, or must name it.
	switch review.Namespace {
	case namespace:
	case "":
		review.Namespace = namespace
	default:
		return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	status, err := reviewSubject(req.Request.Context(), rv.Authorizer, lsarKind, review.Spec, localErrors(review))
	review.Status = status
	return review, err
}

// localErrors are Kubernetes' ValidateLocalSubjectAccessReview beyond a SubjectAccessReview's spec:
// metadata empty but for the namespace, the attributes' namespace that namespace, and no
// non-resource attributes (a path belongs to no namespace).
func localErrors(r *authorizationv1.LocalSubjectAccessReview) field.ErrorList {
	meta := r.ObjectMeta
	meta.Namespace = ""
	var errs field.ErrorList
	if len(emptyMetadata(meta)) > 0 {
		errs = append(errs, field.Invalid(field.NewPath("metadata"), r.ObjectMeta, "must be empty except for namespace"))
	}
	if ra := r.Spec.ResourceAttributes; ra != nil && ra.Namespace != r.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("spec.resourceAttributes.namespace"), ra.Namespace, "must match metadata.namespace"))
	}
	if r.Spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec.nonResourceAttributes"), r.Spec.NonResourceAttributes, "disallowed on this kind of request"))
	}
	return errs
}
