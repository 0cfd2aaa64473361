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
		// The media types and their parameters cut without slices, as splitting cut them.
		{"application/vnd.orch.protobuf, application/json", formatJSON, true, ProtobufMediaType, true},
		{"application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1, application/json", formatJSON, true, "", false},
		{"application/vnd.kubernetes.protobuf; charset=utf-8 ; as=PartialObjectMetadata", 0, false, "", false},
		{"application/vnd.kubernetes.protobuf;charset=utf-8", 0, false, K8sProtobufMediaType, true},
		{"application/vnd.kubernetes.protobuf;;, application/yaml", formatYAML, true, K8sProtobufMediaType, true},
		{"application/yaml;as=Table, application/json;g=meta.k8s.io;as=Table;v=v1beta1", formatTable, true, "", false},
		{"application/json;as=Table;g=meta.k8s.io;v=v2, */*", formatJSON, true, "", false},
		{"text/html, application/vnd.orch.protobuf", 0, false, ProtobufMediaType, true},
		{",application/json", formatJSON, true, "", false},
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

// The Accept header every protobuf client sends is read without allocating: it is read at every
// answer.
func TestNegotiateProtobufAllocates(t *testing.T) {
	r := httptest.NewRequest("PUT", "/api/v1/nodes/n/status", nil)
	r.Header.Set("Accept", ProtobufMediaType+", application/json")
	if n := testing.AllocsPerRun(100, func() { negotiateProtobuf(r) }); n != 0 {
		t.Errorf("negotiateProtobuf allocated %v times", n)
	}
}
