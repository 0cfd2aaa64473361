package filters

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/fields"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/authz"
)

// requestAttributes reads what a request asks for from its method and path, as Kubernetes'
// RequestInfoResolver does: resource requests under /api/v1/ and /apis/<group>/<version>/,
// everything else a non-resource request with the lower-case method as its verb.
func requestAttributes(r *http.Request) authz.Attributes {
	a := authz.Attributes{Path: r.URL.Path, Verb: lowerMethod(r.Method)}
	// Every middleware reads the attributes: the path is cut into an array on the stack rather
	// than split into a new slice each time. A resource path has at most 8 segments
	// (apis/<group>/<version>/namespaces/<ns>/<resource>/<name>/<subresource>); more are not read.
	var segments [8]string
	parts := segments[:0]
	for p, more := strings.Trim(r.URL.Path, "/"), true; more && len(parts) < len(segments); {
		var part string
		part, p, more = strings.Cut(p, "/")
		parts = append(parts, part)
	}
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		a.APIVersion, rest = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		a.APIGroup, a.APIVersion, rest = parts[1], parts[2], parts[3:]
	default:
		return a
	}
	a.ResourceRequest = true
	// namespaces/<ns> is the namespace itself, and so are its status and finalize; anything else
	// after a namespace is a resource in it.
	if rest[0] == "namespaces" && len(rest) > 1 {
		a.Namespace = rest[1]
		if len(rest) > 2 && rest[2] != "status" && rest[2] != "finalize" {
			rest = rest[2:]
		}
	}
	a.Resource = rest[0]
	if len(rest) > 1 {
		a.Name = rest[1]
	}
	if len(rest) > 2 {
		a.Subresource = rest[2]
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		q := endpoints.Query(r)
		switch {
		case q.Get("watch") == "true" || q.Get("watch") == "1":
			a.Verb = "watch"
		case a.Name == "":
			a.Verb = "list"
		default:
			a.Verb = "get"
		}
		// A list or watch of one object by metadata.name names it, as Kubernetes'
		// RequestInfoFactory reads it, so a node may watch a secret of its pods.
		if a.Verb != "get" && a.Subresource == "" {
			if sel, err := fields.ParseSelector(q.Get("fieldSelector")); err == nil {
				if name, ok := sel.RequiresExactMatch("metadata.name"); ok {
					a.Name = name
				}
			}
		}
	case http.MethodPost:
		a.Verb = "create"
	case http.MethodPut:
		a.Verb = "update"
	case http.MethodPatch:
		a.Verb = "patch"
	case http.MethodDelete:
		if a.Name == "" {
			a.Verb = "deletecollection"
		} else {
			a.Verb = "delete"
		}
	}
	return a
}

// lowerMethod is strings.ToLower(method), without allocating for the usual methods.
func lowerMethod(method string) string {
	switch method {
	case http.MethodGet:
		return "get"
	case http.MethodPost:
		return "post"
	case http.MethodPut:
		return "put"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	case http.MethodHead:
		return "head"
	}
	return strings.ToLower(method)
}
