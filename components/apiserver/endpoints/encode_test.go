package endpoints

import (
	"net/http/httptest"
	"testing"
)

// The Accept headers answered without parsing get what parsing them gives, and the others are
// still parsed.
func TestNegotiate(t *testing.T) {
	for _, tc := range []struct {
		accept    string
		format    responseFormat
		ok        bool
		protobuf  string
		preferred bool
	}{
		{"", formatJSON, true, "", false},
		{"application/json", formatJSON, true, "", false},
		{" application/json ", formatJSON, true, "", false},
		{"application/json;as=Table;g=meta.k8s.io;v=v1", formatTable, true, "", false},
		{"application/yaml", formatYAML, true, "", false},
		{"application/vnd.kubernetes.protobuf,application/json", formatJSON, true, K8sProtobufMediaType, true},
		{"application/json,application/vnd.kubernetes.protobuf", formatJSON, true, "", false},
		{"text/html", 0, false, "", false},
	} {
		r := httptest.NewRequest("GET", "/api/v1/pods", nil)
		if tc.accept != "" {
			r.Header.Set("Accept", tc.accept)
		}
		if format, ok := negotiate(r); format != tc.format || ok != tc.ok {
			t.Errorf("negotiate(%q) = %v, %v; want %v, %v", tc.accept, format, ok, tc.format, tc.ok)
		}
		if mediaType, ok := negotiateProtobuf(r); mediaType != tc.protobuf || ok != tc.preferred {
			t.Errorf("negotiateProtobuf(%q) = %q, %v; want %q, %v", tc.accept, mediaType, ok, tc.protobuf, tc.preferred)
		}
	}
}
