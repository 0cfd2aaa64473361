package server

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/apiserver/registry/authentication"
	"orch.io/orch/components/apiserver/registry/authorization"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// addReviews serves authentication.orch.io/v1 selfsubjectreviews and tokenreviews, and
// authorization.orch.io/v1 localsubjectaccessreviews (in a namespace), selfsubjectaccessreviews,
// selfsubjectrulesreviews and subjectaccessreviews (create only) on container, and answers their
// group versions for discovery.
func addReviews(container *restful.Container, c Config) []endpoints.GroupVersion {
	type review struct {
		resource metav1.APIResource
		create   restful.RouteFunction
	}
	served := []struct {
		gv      schema.GroupVersion
		reviews []review
	}{
		{authn.TokenReviewGroupVersion, []review{
			{metav1.APIResource{Name: "selfsubjectreviews", SingularName: "selfsubjectreview", Kind: "SelfSubjectReview"}, authentication.SelfSubjectReviewREST{Clock: c.Clock}.Create()},
			{metav1.APIResource{Name: "tokenreviews", SingularName: "tokenreview", Kind: "TokenReview"}, authentication.TokenReviewREST{Authenticator: c.Authenticator}.Create()},
		}},
		{authz.SubjectAccessReviewGroupVersion, []review{
			{metav1.APIResource{Name: "localsubjectaccessreviews", SingularName: "localsubjectaccessreview", Namespaced: true, Kind: "LocalSubjectAccessReview"}, authorization.LocalSubjectAccessReviewREST{Authorizer: c.Authorizer}.Create()},
			{metav1.APIResource{Name: "selfsubjectaccessreviews", SingularName: "selfsubjectaccessreview", Kind: "SelfSubjectAccessReview"}, authorization.SelfSubjectAccessReviewREST{Authorizer: c.Authorizer}.Create()},
			{metav1.APIResource{Name: "selfsubjectrulesreviews", SingularName: "selfsubjectrulesreview", Kind: "SelfSubjectRulesReview"}, authorization.SelfSubjectRulesReviewREST{Authorizer: c.Authorizer}.Create()},
			{metav1.APIResource{Name: "subjectaccessreviews", SingularName: "subjectaccessreview", Kind: "SubjectAccessReview"}, authorization.SubjectAccessReviewREST{Authorizer: c.Authorizer}.Create()},
		}},
	}
	var groups []endpoints.GroupVersion
	for _, s := range served {
		list := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: s.gv.String()}
		ws := new(restful.WebService)
		ws.Path("/apis/" + s.gv.String()).Produces("*/*")
		ws.Route(ws.GET("/").To(func(req *restful.Request, resp *restful.Response) {
			endpoints.WriteObject(resp.ResponseWriter, req.Request, http.StatusOK, list)
		}))
		for _, r := range s.reviews {
			r.resource.Verbs = metav1.Verbs{"create"}
			list.APIResources = append(list.APIResources, r.resource)
			path := "/" + r.resource.Name
			if r.resource.Namespaced {
				path = "/namespaces/{namespace}" + path
			}
			ws.Route(ws.POST(path).To(r.create))
		}
		container.Add(ws)
		groups = append(groups, endpoints.GroupVersion{GroupVersion: s.gv})
	}
	return groups
}
