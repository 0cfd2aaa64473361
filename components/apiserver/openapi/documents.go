package openapi

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Resource is one served resource, as the documents describe it.
type Resource struct {
	Group, Version, Kind, Plural string
	Namespaced                   bool
	// Object and List are the Go types of the object and of its list.
	Object, List reflect.Type
	// Descriptions document types for kubectl explain.
	Descriptions map[reflect.Type]Descriptions
}

// Documented is a resource's strategy that documents its types for kubectl explain.
type Documented interface {
	OpenAPIDescriptions() map[reflect.Type]Descriptions
}

// pathPrefix is where the resource's group-version is served: /api/v1 for the core group.
func (r Resource) pathPrefix() string {
	if r.Group == "" {
		return "/api/" + r.Version
	}
	return "/apis/" + r.Group + "/" + r.Version
}

// document is an encoded document and its ETag.
type document struct {
	data []byte
	etag string
}

func newDocument(data []byte) document {
	return document{data: data, etag: fmt.Sprintf("\"%X\"", sha512.Sum512(data))}
}

// Documents are the encoded OpenAPI documents of a set of resources.
type Documents struct {
	v2JSON, v2Proto document
	v3Root          document
	// v3 holds each group-version's document by its path under /openapi/v3/.
	v3 map[string]document
}

// Build encodes the documents of resources. title and version fill the info section.
func Build(title, version string, resources []Resource) (*Documents, error) {
	docs := &Documents{v3: map[string]document{}}
	v2, err := json.Marshal(v2Document(title, version, resources))
	if err != nil {
		return nil, err
	}
	docs.v2JSON = newDocument(v2)
	parsed, err := openapi_v2.ParseDocument(v2)
	if err != nil {
		return nil, fmt.Errorf("openapi: the v2 document does not parse: %w", err)
	}
	pb, err := proto.Marshal(parsed)
	if err != nil {
		return nil, err
	}
	docs.v2Proto = newDocument(pb)

	byGV := map[string][]Resource{}
	for _, r := range resources {
		key := strings.TrimPrefix(r.pathPrefix(), "/")
		byGV[key] = append(byGV[key], r)
	}
	root := map[string]any{}
	for _, key := range sortedKeys(byGV) {
		data, err := json.Marshal(v3Document(title, version, byGV[key]))
		if err != nil {
			return nil, err
		}
		d := newDocument(data)
		docs.v3[key] = d
		root[key] = map[string]any{"serverRelativeURL": "/openapi/v3/" + key + "?hash=" + strings.Trim(d.etag, `"`)}
	}
	rootData, err := json.Marshal(map[string]any{"paths": root})
	if err != nil {
		return nil, err
	}
	docs.v3Root = newDocument(rootData)
	return docs, nil
}

// operation is one REST operation of a resource.
type operation struct {
	method, action, idVerb string
	item, list             bool // on /{name}, or a list read
	body                   bool
	returns                reflect.Type
	allNamespaces          bool
}

func operations(r Resource) []operation {
	status := reflect.TypeFor[metav1.Status]()
	ops := []operation{
		{method: "get", action: "list", idVerb: "list", list: true, returns: r.List},
		{method: "post", action: "post", idVerb: "create", body: true, returns: r.Object},
		{method: "delete", action: "deletecollection", idVerb: "deleteCollection", returns: status},
		{method: "get", action: "get", idVerb: "read", item: true, returns: r.Object},
		{method: "put", action: "put", idVerb: "replace", item: true, body: true, returns: r.Object},
		{method: "patch", action: "patch", idVerb: "patch", item: true, body: true, returns: r.Object},
		{method: "delete", action: "delete", idVerb: "delete", item: true, returns: status},
	}
	if r.Namespaced {
		ops = append(ops, operation{method: "get", action: "list", idVerb: "list", list: true, returns: r.List, allNamespaces: true})
	}
	return ops
}

func (r Resource) path(op operation) string {
	p := r.pathPrefix()
	if r.Namespaced && !op.allNamespaces {
		p += "/namespaces/{namespace}"
	}
	p += "/" + r.Plural
	if op.item {
		p += "/{name}"
	}
	return p
}

func (r Resource) operationID(op operation) string {
	scope := ""
	switch {
	case op.allNamespaces:
		return op.idVerb + r.Kind + "ForAllNamespaces"
	case r.Namespaced:
		scope = "Namespaced"
	}
	return op.idVerb + scope + r.Kind
}

// queryParams are the query parameters an operation takes, as Kubernetes names them. fieldValidation
// on patch is what kubectl looks for before it leaves validation to the server.
func queryParams(op operation) []string {
	params := []string{"pretty"}
	switch {
	case op.list:
		params = append(params, "allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
			"resourceVersion", "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch")
	case op.body:
		params = append(params, "dryRun", "fieldManager", "fieldValidation")
		if op.method == "patch" {
			params = append(params, "force")
		}
	case op.method == "delete":
		params = append(params, "dryRun", "gracePeriodSeconds", "propagationPolicy")
		if !op.item {
			params = append(params, "continue", "fieldSelector", "labelSelector", "limit")
		}
	}
	return params
}

var queryParamTypes = map[string]string{
	"allowWatchBookmarks": "boolean", "force": "boolean", "sendInitialEvents": "boolean", "watch": "boolean",
	"limit": "integer", "timeoutSeconds": "integer", "gracePeriodSeconds": "integer",
}

func paramType(name string) string {
	if t, ok := queryParamTypes[name]; ok {
		return t
	}
	return "string"
}

// gvkExtension names an operation's kind: one object on operations (a list on schemas, which may
// serve several), as Kubernetes writes them and kubectl reads them.
func gvkExtension(r Resource) map[string]any {
	return map[string]any{"group": r.Group, "version": r.Version, "kind": r.Kind}
}

// patchTypes are the patch media types orch applies.
var patchTypes = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"}

// walk reads resources once for either version: the schemas of their types (with their kinds), and
// each operation's object as build makes it, with the markers kubectl reads added.
func walk(refPrefix string, resources []Resource, build func(s *schemas, r Resource, op operation) map[string]any) (paths map[string]map[string]any, defs map[string]map[string]any) {
	s := &schemas{refPrefix: refPrefix, defs: map[string]map[string]any{}, descriptions: map[reflect.Type]Descriptions{}}
	paths = map[string]map[string]any{}
	for _, r := range resources {
		for t, d := range r.Descriptions {
			s.descriptions[t] = d
		}
		for _, t := range []reflect.Type{r.Object, r.List} {
			s.schemaOf(t)
			s.defs[definitionName(t)]["x-kubernetes-group-version-kind"] = []any{map[string]any{"group": r.Group, "version": r.Version, "kind": t.Name()}}
		}
		for _, op := range operations(r) {
			o := build(s, r, op)
			o["operationId"] = r.operationID(op)
			o["x-kubernetes-action"] = op.action
			o["x-kubernetes-group-version-kind"] = gvkExtension(r)
			if paths[r.path(op)] == nil {
				paths[r.path(op)] = map[string]any{}
			}
			paths[r.path(op)][op.method] = o
		}
	}
	return paths, s.defs
}

func v2Document(title, version string, resources []Resource) map[string]any {
	paths, defs := walk("#/definitions/", resources, func(s *schemas, r Resource, op operation) map[string]any {
		var params []any
		for _, p := range pathParams(r, op) {
			params = append(params, map[string]any{"name": p, "in": "path", "required": true, "type": "string", "uniqueItems": true})
		}
		for _, q := range queryParams(op) {
			params = append(params, map[string]any{"name": q, "in": "query", "type": paramType(q), "uniqueItems": true})
		}
		if op.body {
			params = append(params, map[string]any{"name": "body", "in": "body", "required": true, "schema": s.schemaOf(r.Object)})
		}
		o := map[string]any{
			"parameters": params,
			"produces":   []string{"application/json", "application/yaml"},
			"schemes":    []string{"https"},
			"responses":  map[string]any{"200": map[string]any{"description": "OK", "schema": s.schemaOf(op.returns)}, "401": map[string]any{"description": "Unauthorized"}},
		}
		if op.method == "patch" {
			o["consumes"] = patchTypes
		}
		return o
	})
	return map[string]any{
		"swagger":     "2.0",
		"info":        map[string]any{"title": title, "version": version},
		"paths":       paths,
		"definitions": defs,
	}
}

func v3Document(title, version string, resources []Resource) map[string]any {
	paths, defs := walk("#/components/schemas/", resources, func(s *schemas, r Resource, op operation) map[string]any {
		var params []any
		for _, p := range pathParams(r, op) {
			params = append(params, map[string]any{"name": p, "in": "path", "required": true, "schema": map[string]any{"type": "string", "uniqueItems": true}})
		}
		for _, q := range queryParams(op) {
			params = append(params, map[string]any{"name": q, "in": "query", "schema": map[string]any{"type": paramType(q), "uniqueItems": true}})
		}
		returns := s.schemaOf(op.returns)
		o := map[string]any{
			"parameters": params,
			"responses": map[string]any{
				"200": map[string]any{"description": "OK", "content": map[string]any{
					"application/json": map[string]any{"schema": returns},
					"application/yaml": map[string]any{"schema": returns},
				}},
				"401": map[string]any{"description": "Unauthorized"},
			},
		}
		if op.body {
			content := map[string]any{}
			types := []string{"*/*"}
			if op.method == "patch" {
				types = patchTypes
			}
			for _, mt := range types {
				content[mt] = map[string]any{"schema": s.schemaOf(r.Object)}
			}
			o["requestBody"] = map[string]any{"required": true, "content": content}
		}
		return o
	})
	return map[string]any{
		"openapi":    "3.0.0",
		"info":       map[string]any{"title": title, "version": version},
		"paths":      paths,
		"components": map[string]any{"schemas": defs},
	}
}

func pathParams(r Resource, op operation) []string {
	var params []string
	if r.Namespaced && !op.allNamespaces {
		params = append(params, "namespace")
	}
	if op.item {
		params = append(params, "name")
	}
	return params
}
