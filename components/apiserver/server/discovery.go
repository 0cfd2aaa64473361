package server

import (
	"net/http"

	restful "github.com/emicklei/go-restful/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch.io/orch/components/apiserver/endpoints"
)

// discoveryService answers /api and /apis: the core version and every group, in the order of
// groups (events first), then the groups orch renames under Kubernetes' names (aliases), so a
// client resolving a resource by name finds orch's group first.
func discoveryService(groups []endpoints.GroupVersion, aliases []alias) *restful.WebService {
	groupOf := func(gv schema.GroupVersion) metav1.APIGroup {
		v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		return metav1.APIGroup{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
			Name:     gv.Group, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v,
		}
	}
	var all []metav1.APIGroup
	for _, g := range groups {
		if g.GroupVersion.Group != "" {
			all = append(all, groupOf(g.GroupVersion))
		}
	}
	for _, a := range aliases {
		all = append(all, groupOf(a.kubernetes))
	}
	ws := new(restful.WebService)
	ws.Path("/").Produces("*/*")
	ws.Route(ws.GET("/api").To(func(req *restful.Request, resp *restful.Response) {
		writeJSON(resp.ResponseWriter, req.Request, &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
			ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: req.Request.Host}},
		})
	}))
	ws.Route(ws.GET("/apis").To(func(req *restful.Request, resp *restful.Response) {
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for _, g := range all {
			g.TypeMeta = metav1.TypeMeta{}
			list.Groups = append(list.Groups, g)
		}
		writeJSON(resp.ResponseWriter, req.Request, list)
	}))
	for _, g := range all {
		ws.Route(ws.GET("/apis/" + g.Name).To(func(req *restful.Request, resp *restful.Response) {
			writeJSON(resp.ResponseWriter, req.Request, &g)
		}))
	}
	return ws
}

func writeJSON(w http.ResponseWriter, r *http.Request, obj any) {
	endpoints.WriteObject(w, r, http.StatusOK, obj)
}

func jsonHandler(obj func() any) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { writeJSON(w, r, obj()) })
}
