package endpoints

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// An answer in protobuf is the serializer's encoding under its code and headers, whatever the
// pooled buffer held before (a larger answer, then a smaller one); what cannot be encoded is a
// 500 Status.
func TestWriteProtobuf(t *testing.T) {
	node := func(name string, images int) *corev1.Node {
		n := &corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
		for i := range images {
			n.Status.Images = append(n.Status.Images, corev1.ContainerImage{Names: []string{strings.Repeat("i", 100+i)}})
		}
		return n
	}
	for _, tc := range []struct {
		name string
		code int
		obj  runtime.Object
	}{
		{"large", http.StatusCreated, node("large", 50)},
		{"small", http.StatusOK, node("small", 0)},
		{"unencodable", http.StatusOK, &unstructured.Unstructured{Object: map[string]any{"kind": "Node", "apiVersion": "v1"}}},
	} {
		w := httptest.NewRecorder()
		writeProtobuf(w, tc.code, ProtobufMediaType, tc.obj)
		if tc.name == "unencodable" {
			if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), `"kind":"Status"`) {
				t.Errorf("%s: %d %q, want a 500 Status", tc.name, w.Code, w.Body)
			}
			continue
		}
		var want bytes.Buffer
		if err := protobufSerializer.Encode(tc.obj, &want); err != nil {
			t.Fatal(err)
		}
		if w.Code != tc.code || w.Header().Get("Content-Type") != ProtobufMediaType || w.Header().Get("Cache-Control") != "no-cache, private" {
			t.Errorf("%s: %d %v", tc.name, w.Code, w.Header())
		}
		if !bytes.Equal(w.Body.Bytes(), want.Bytes()) {
			t.Errorf("%s: body %q, want %q", tc.name, w.Body, want.Bytes())
		}
	}
}
