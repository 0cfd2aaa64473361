package core

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apiserver/endpoints"
)

// writeCreated answers a subresource's create that returns no object: a 201 Success Status.
func writeCreated(req *restful.Request, resp *restful.Response) {
	endpoints.WriteObject(resp.ResponseWriter, req.Request, http.StatusCreated, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated,
	})
}
