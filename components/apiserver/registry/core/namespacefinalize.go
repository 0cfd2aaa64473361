package core

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"
	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/apiserver/registry/generic"
)

// FinalizeREST is namespaces/finalize: only spec.finalizers changes.
type FinalizeREST struct {
	store *generic.Store
}

// NewFinalizeREST serves the finalize subresource of the namespaces in namespaces.
func NewFinalizeREST(namespaces *generic.Store) FinalizeREST {
	return FinalizeREST{store: namespaces.WithUpdates("finalize", NamespaceFinalizeStrategy{}).WithoutAdmission()}
}

// Subresource describes namespaces/finalize to the endpoints.
func (f FinalizeREST) Subresource() endpoints.Subresource {
	return endpoints.Subresource{Name: "finalize", Method: http.MethodPut, Verbs: []string{"update"}, Kind: "Namespace", Handler: f.update}
}

func (f FinalizeREST) update(req *restful.Request, resp *restful.Response) {
	var ns corev1.Namespace
	if err := endpoints.DecodeBody(req.Request, &ns, corev1.SchemeGroupVersion.WithKind("Namespace")); err != nil {
		endpoints.WriteError(resp.ResponseWriter, req.Request, err)
		return
	}
	out, _, err := f.store.Update(req.Request.Context(), "", req.PathParameter("name"), &ns, false)
	if err != nil {
		endpoints.WriteError(resp.ResponseWriter, req.Request, err)
		return
	}
	endpoints.WriteObject(resp.ResponseWriter, req.Request, http.StatusOK, out)
}
