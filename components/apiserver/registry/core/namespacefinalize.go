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
	return endpoints.Subresource{Name: "finalize", Method: http.MethodPut, Verbs: []string{"update"}, Kind: "Namespace",
		Handler: endpoints.BodyHandler(corev1.SchemeGroupVersion.WithKind("Namespace"), f.update)}
}

func (f FinalizeREST) update(req *restful.Request, ns *corev1.Namespace) (int, any, error) {
	out, _, err := f.store.Update(req.Request.Context(), "", req.PathParameter("name"), ns, false)
	return http.StatusOK, out, err
}
