package server

import (
	"net/http"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// reviews answers TokenReviews and SubjectAccessReviews with the server's own authenticator and
// authorizer, so that an agent can check the callers of its own server against the API server.
type reviews struct {
	authenticator authn.Authenticator
	authorizer    authz.Authorizer
}

// addReviews serves authentication.orch.io/v1 tokenreviews and authorization.orch.io/v1
// subjectaccessreviews (create only) on container, and answers their group versions for
// discovery.
func addReviews(container *restful.Container, c Config) []endpoints.GroupVersion {
	rv := reviews{authenticator: c.Authenticator, authorizer: c.Authorizer}
	served := []struct {
		gv       schema.GroupVersion
		resource metav1.APIResource
		create   restful.RouteFunction
	}{
		{authn.TokenReviewGroupVersion, metav1.APIResource{Name: "tokenreviews", SingularName: "tokenreview", Kind: "TokenReview"}, rv.tokenReview},
		{authz.SubjectAccessReviewGroupVersion, metav1.APIResource{Name: "subjectaccessreviews", SingularName: "subjectaccessreview", Kind: "SubjectAccessReview"}, rv.subjectAccessReview},
	}
	var groups []endpoints.GroupVersion
	for _, s := range served {
		s.resource.Verbs = metav1.Verbs{"create"}
		list := &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: s.gv.String(), APIResources: []metav1.APIResource{s.resource},
		}
		ws := new(restful.WebService)
		ws.Path("/apis/" + s.gv.String()).Produces("*/*")
		ws.Route(ws.GET("/").To(func(req *restful.Request, resp *restful.Response) {
			endpoints.WriteObject(resp.ResponseWriter, req.Request, http.StatusOK, list)
		}))
		ws.Route(ws.POST("/" + s.resource.Name).To(s.create))
		container.Add(ws)
		groups = append(groups, endpoints.GroupVersion{GroupVersion: s.gv})
	}
	return groups
}

// tokenReview authenticates spec.token as a bearer token of a request to this server would be,
// as Kubernetes' TokenReview does.
func (rv reviews) tokenReview(req *restful.Request, resp *restful.Response) {
	gvk := authn.TokenReviewGroupVersion.WithKind("TokenReview")
	review := &authenticationv1.TokenReview{}
	if err := endpoints.DecodeCreate(resp.ResponseWriter, req.Request, review, gvk); err != nil {
		endpoints.WriteError(resp.ResponseWriter, req.Request, err)
		return
	}
	token := review.Spec.Token
	if token == "" {
		endpoints.WriteError(resp.ResponseWriter, req.Request, apierrors.NewBadRequest("token is required for TokenReview in authentication"))
		return
	}
	review.Status = authenticationv1.TokenReviewStatus{}
	// A header carries the token up to its first space: a token with one is no token of ours.
	if strings.ContainsAny(token, " \t\r\n") {
		review.Status.Error = authn.ErrInvalidToken.Error()
	} else {
		ctx := req.Request.Context()
		if len(review.Spec.Audiences) > 0 {
			// Audience-aware authenticators (service account tokens) check the token against these.
			ctx = authn.WithAudiences(ctx, review.Spec.Audiences)
		}
		ctx, granted := authn.WithGrantedAudiences(ctx)
		probe, err := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
		if err != nil {
			endpoints.WriteError(resp.ResponseWriter, req.Request, apierrors.NewInternalError(err))
			return
		}
		probe.Header.Set("Authorization", "Bearer "+token)
		user, ok, err := rv.authenticator.AuthenticateRequest(probe)
		review.Status.Authenticated = ok
		if err != nil {
			review.Status.Error = err.Error()
		}
		if ok {
			review.Status.User = authenticationv1.UserInfo{Username: user.Name, UID: user.UID, Groups: user.Groups}
			for k, v := range user.Extra {
				if review.Status.User.Extra == nil {
					review.Status.User.Extra = map[string]authenticationv1.ExtraValue{}
				}
				review.Status.User.Extra[k] = v
			}
			// An audience-aware authenticator says which audiences the token holds for; the token
			// file and client certificates hold for any, as Kubernetes' audience-agnostic
			// authenticators do: the token is good for those asked about.
			review.Status.Audiences = review.Spec.Audiences
			if auds, ok := granted(); ok {
				review.Status.Audiences = auds
			}
		}
	}
	review.TypeMeta = metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}
	endpoints.WriteObject(resp.ResponseWriter, req.Request, http.StatusCreated, review)
}

// subjectAccessReview asks the server's authorizer whether the user of the spec may do what it
// describes, as Kubernetes' SubjectAccessReview does.
func (rv reviews) subjectAccessReview(req *restful.Request, resp *restful.Response) {
	gvk := authz.SubjectAccessReviewGroupVersion.WithKind("SubjectAccessReview")
	review := &authorizationv1.SubjectAccessReview{}
	if err := endpoints.DecodeCreate(resp.ResponseWriter, req.Request, review, gvk); err != nil {
		endpoints.WriteError(resp.ResponseWriter, req.Request, err)
		return
	}
	if errs := validateSubjectAccessReview(review); len(errs) > 0 {
		endpoints.WriteError(resp.ResponseWriter, req.Request, apierrors.NewInvalid(gvk.GroupKind(), "", errs))
		return
	}
	spec := review.Spec
	user := &authn.UserInfo{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	for k, v := range spec.Extra {
		if user.Extra == nil {
			user.Extra = map[string][]string{}
		}
		user.Extra[k] = v
	}
	attrs := authz.Attributes{User: user}
	if ra := spec.ResourceAttributes; ra != nil {
		attrs.Verb, attrs.Namespace, attrs.Name = ra.Verb, ra.Namespace, ra.Name
		attrs.APIGroup, attrs.APIVersion, attrs.Resource, attrs.Subresource = ra.Group, ra.Version, ra.Resource, ra.Subresource
		attrs.ResourceRequest = true
	} else {
		attrs.Verb, attrs.Path = spec.NonResourceAttributes.Verb, spec.NonResourceAttributes.Path
	}
	decision, reason, err := rv.authorizer.Authorize(req.Request.Context(), attrs)
	review.Status = authorizationv1.SubjectAccessReviewStatus{
		Allowed: decision == authz.DecisionAllow, Denied: decision == authz.DecisionDeny, Reason: reason,
	}
	if err != nil {
		review.Status.EvaluationError = err.Error()
	}
	review.TypeMeta = metav1.TypeMeta{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind}
	endpoints.WriteObject(resp.ResponseWriter, req.Request, http.StatusCreated, review)
}

// validateSubjectAccessReview is Kubernetes' validation: no metadata, exactly one kind of
// attributes, and a user or a group.
func validateSubjectAccessReview(r *authorizationv1.SubjectAccessReview) field.ErrorList {
	var errs field.ErrorList
	meta := r.ObjectMeta
	meta.ManagedFields = nil
	if !apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, meta) {
		errs = append(errs, field.Invalid(field.NewPath("metadata"), r.ObjectMeta, "must be empty"))
	}
	spec, path := r.Spec, field.NewPath("spec")
	if (spec.ResourceAttributes == nil) == (spec.NonResourceAttributes == nil) {
		errs = append(errs, field.Invalid(path, spec.NonResourceAttributes, "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(path.Child("user"), spec.User, "at least one of user or group must be specified"))
	}
	return errs
}
