package core

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/apiserver/registry/generic"
)

// EvictionREST is pods/eviction: a delete with the eviction's options. orch has no disruption
// budgets, so an eviction is always allowed.
type EvictionREST struct {
	pods *generic.Store
}

// NewEvictionREST serves the eviction of the pods in pods.
func NewEvictionREST(pods *generic.Store) EvictionREST { return EvictionREST{pods: pods} }

// Subresource describes pods/eviction to the endpoints.
func (e EvictionREST) Subresource() endpoints.Subresource {
	return endpoints.Subresource{Name: "eviction", Method: http.MethodPost, Verbs: []string{"create"}, Kind: "Eviction",
		Handler: endpoints.BodyHandler(policyv1.SchemeGroupVersion.WithKind("Eviction"), e.create)}
}

func (e EvictionREST) create(req *restful.Request, eviction *policyv1.Eviction) (int, any, error) {
	name := req.PathParameter("name")
	if eviction.Name != "" && eviction.Name != name {
		return 0, nil, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	var opts generic.DeleteOptions
	if d := eviction.DeleteOptions; d != nil {
		opts.GracePeriodSeconds = d.GracePeriodSeconds
		opts.DryRun = len(d.DryRun) > 0
		if d.Preconditions != nil {
			opts.UID, opts.ResourceVersion = d.Preconditions.UID, d.Preconditions.ResourceVersion
		}
	}
	if _, _, err := e.pods.Delete(req.Request.Context(), req.PathParameter("namespace"), name, opts); err != nil {
		return 0, nil, err
	}
	return endpoints.Created()
}
