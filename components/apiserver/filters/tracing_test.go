package filters

import (
	"testing"

	"orch.io/orch/components/authz"
)

// A span is named after the request's route, its namespace and name as placeholders.
func TestSpanName(t *testing.T) {
	for _, tc := range []struct {
		method string
		attrs  authz.Attributes
		want   string
	}{
		{"GET", authz.Attributes{Path: "/healthz"}, "GET"},
		{"POST", authz.Attributes{ResourceRequest: true, APIGroup: "events.orch.io", APIVersion: "v1", Namespace: "default", Resource: "events"},
			"POST /apis/events.orch.io/v1/namespaces/{:namespace}/events"},
		{"PUT", authz.Attributes{ResourceRequest: true, APIVersion: "v1", Namespace: "default", Resource: "pods", Name: "p", Subresource: "status"},
			"PUT /api/v1/namespaces/{:namespace}/pods/{:name}/status"},
		{"GET", authz.Attributes{ResourceRequest: true, APIVersion: "v1", Resource: "nodes", Name: "n"}, "GET /api/v1/nodes/{:name}"},
	} {
		if got := spanName(tc.method, tc.attrs); got != tc.want {
			t.Errorf("spanName(%s, %+v) = %q, want %q", tc.method, tc.attrs, got, tc.want)
		}
	}
}
