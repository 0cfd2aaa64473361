package server

import (
	"reflect"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/apiserver/openapi"
)

// servedResources are the resources the OpenAPI documents describe: every resource of groups,
// with the descriptions its strategy gives.
func servedResources(groups []endpoints.GroupVersion) []openapi.Resource {
	var resources []openapi.Resource
	for _, g := range groups {
		for _, r := range g.Resources {
			s := r.Store.Strategy()
			gvr := s.Resource()
			res := openapi.Resource{
				Group: gvr.Group, Version: gvr.Version, Kind: s.Kind(), Plural: gvr.Resource, Namespaced: s.NamespaceScoped(),
				Object: reflect.TypeOf(s.New()).Elem(), List: reflect.TypeOf(s.NewList()).Elem(),
			}
			if d, ok := s.(openapi.Documented); ok {
				res.Descriptions = d.OpenAPIDescriptions()
			}
			resources = append(resources, res)
		}
	}
	return resources
}
