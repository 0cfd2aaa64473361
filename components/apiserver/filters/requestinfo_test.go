package filters

import (
	"net/http/httptest"
	"testing"

	"orch.io/orch/components/authz"
)

// The attributes of resource and non-resource requests, however many segments their paths have.
func TestRequestAttributes(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           authz.Attributes
	}{
		{"POST", "/apis/events.orch.io/v1/namespaces/default/events",
			authz.Attributes{Verb: "create", Namespace: "default", APIGroup: "events.orch.io", APIVersion: "v1", Resource: "events", ResourceRequest: true}},
		{"PUT", "/api/v1/namespaces/default/pods/p/status",
			authz.Attributes{Verb: "update", Namespace: "default", APIVersion: "v1", Resource: "pods", Name: "p", Subresource: "status", ResourceRequest: true}},
		{"PATCH", "/apis/g/v1/namespaces/ns/things/n/sub/extra/more",
			authz.Attributes{Verb: "patch", Namespace: "ns", APIGroup: "g", APIVersion: "v1", Resource: "things", Name: "n", Subresource: "sub", ResourceRequest: true}},
		{"GET", "/api/v1/namespaces/team",
			authz.Attributes{Verb: "get", Namespace: "team", APIVersion: "v1", Resource: "namespaces", Name: "team", ResourceRequest: true}},
		{"PUT", "/api/v1/namespaces/team/finalize",
			authz.Attributes{Verb: "update", Namespace: "team", APIVersion: "v1", Resource: "namespaces", Name: "team", Subresource: "finalize", ResourceRequest: true}},
		{"GET", "/api/v1/nodes?watch=true", authz.Attributes{Verb: "watch", APIVersion: "v1", Resource: "nodes", ResourceRequest: true}},
		{"GET", "/api/v1/namespaces/a/secrets?fieldSelector=metadata.name%3Ds",
			authz.Attributes{Verb: "list", Namespace: "a", APIVersion: "v1", Resource: "secrets", Name: "s", ResourceRequest: true}},
		{"DELETE", "//api//v1/nodes", authz.Attributes{Verb: "delete", Resource: "v1", Name: "nodes", ResourceRequest: true}},
		{"DELETE", "/api/v1/nodes", authz.Attributes{Verb: "deletecollection", APIVersion: "v1", Resource: "nodes", ResourceRequest: true}},
		{"POST", "/api/v1/namespaces/default/pods/web/exec?command=ls&stdout=1",
			authz.Attributes{Verb: "create", Namespace: "default", APIVersion: "v1", Resource: "pods", Name: "web", Subresource: "exec", ResourceRequest: true}},
		{"GET", "/api/v1/namespaces/default/pods/web/portforward",
			authz.Attributes{Verb: "get", Namespace: "default", APIVersion: "v1", Resource: "pods", Name: "web", Subresource: "portforward", ResourceRequest: true}},
		{"GET", "/api/v1/nodes/node-a/proxy/metrics/cadvisor",
			authz.Attributes{Verb: "get", APIVersion: "v1", Resource: "nodes", Name: "node-a", Subresource: "proxy", ResourceRequest: true}},
		{"GET", "/healthz", authz.Attributes{Verb: "get"}},
		{"OPTIONS", "/apis", authz.Attributes{Verb: "options"}},
		{"GET", "/", authz.Attributes{Verb: "get"}},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		tc.want.Path = r.URL.Path
		if got := requestAttributes(r); got != tc.want {
			t.Errorf("%s %s:\n got %+v\nwant %+v", tc.method, tc.target, got, tc.want)
		}
	}
}

// The long-running requests no limit applies to, as Kubernetes' long-running check tells them.
func TestExempt(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           bool
	}{
		{"GET", "/api/v1/namespaces/default/pods/web/log?follow=true", true},
		{"POST", "/api/v1/namespaces/default/pods/web/exec?command=sh", true},
		{"GET", "/api/v1/namespaces/default/pods/web/attach", true},
		{"POST", "/api/v1/namespaces/default/pods/web/portforward", true},
		{"GET", "/api/v1/nodes/node-a/proxy/metrics", true},
		{"GET", "/api/v1/pods?watch=true", true},
		{"GET", "/readyz", true},
		{"GET", "/api/v1/namespaces/default/pods/web", false},
		{"POST", "/api/v1/namespaces/default/pods/web/eviction", false},
		{"GET", "/apis/g/v1/namespaces/default/things/t/log", false},
	} {
		if got := exempt(httptest.NewRequest(tc.method, tc.target, nil)); got != tc.want {
			t.Errorf("%s %s: exempt %v, want %v", tc.method, tc.target, got, tc.want)
		}
	}
}
