package endpoints

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
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

// A body whose envelope names the kind asked for is decoded in place, into what the serializer
// decodes, and its object's failures are the serializer's; every other body is the serializer's,
// decoded or refused as before.
func TestDecodeProtobufIsTheSerializers(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "b"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	nodeRaw, err := node.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}}
	evictionRaw, err := eviction.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	envelope := func(apiVersion, kind string, raw []byte, extra ...byte) []byte {
		u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw, ContentType: "x"}
		b, err := u.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return append(append(append([]byte(nil), protobufPrefix...), b...), extra...)
	}
	nodeGVK := corev1.SchemeGroupVersion.WithKind("Node")
	evictionGVK := policyv1.SchemeGroupVersion.WithKind("Eviction")
	newNode := func() runtime.Object { return &corev1.Node{} }
	for _, tc := range []struct {
		name  string
		body  []byte
		into  func() runtime.Object
		gvk   schema.GroupVersionKind
		named bool
	}{
		{"node", envelope("v1", "Node", nodeRaw), newNode, nodeGVK, true},
		{"eviction", envelope("policy/v1", "Eviction", evictionRaw), func() runtime.Object { return &policyv1.Eviction{} }, evictionGVK, true},
		{"no object", envelope("v1", "Node", nil), newNode, nodeGVK, true},
		{"a broken object", envelope("v1", "Node", []byte{0xff, 0xff}), newNode, nodeGVK, true},
		{"another kind", envelope("v1", "Pod", nodeRaw), newNode, nodeGVK, false},
		{"another version", envelope("v2", "Node", nodeRaw), newNode, nodeGVK, false},
		{"another group", envelope("policyx/v1", "Eviction", evictionRaw), func() runtime.Object { return &policyv1.Eviction{} }, evictionGVK, false},
		{"no apiVersion", envelope("", "Node", nodeRaw), newNode, nodeGVK, false},
		{"no kind", envelope("v1", "", nodeRaw), newNode, nodeGVK, false},
		{"no TypeMeta", append(append([]byte(nil), protobufPrefix...), 0x12, 0), newNode, nodeGVK, false},
		{"into another type", envelope("v1", "Node", nodeRaw), func() runtime.Object { return &corev1.Pod{} }, nodeGVK, false},
		{"the object twice", envelope("v1", "Node", nodeRaw, 0x12, 0), newNode, nodeGVK, false},
		{"an unknown field", envelope("v1", "Node", nodeRaw, 0x2a, 0), newNode, nodeGVK, false},
		{"a varint field", envelope("v1", "Node", nodeRaw, 0x18, 1), newNode, nodeGVK, false},
		{"truncated", envelope("v1", "Node", nodeRaw)[:20], newNode, nodeGVK, false},
		{"not an envelope", nodeRaw, newNode, nodeGVK, false},
		{"only the prefix", protobufPrefix, newNode, nodeGVK, false},
		{"empty", nil, newNode, nodeGVK, false},
	} {
		got, want := tc.into(), tc.into()
		gotErr, wantErr := decodeProtobuf(tc.body, got, tc.gvk), decodeSerialized(tc.body, want, tc.gvk)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decoded %v, %v; the serializer %v, %v", tc.name, got, gotErr, want, wantErr)
		}
		if named, _ := decodeNamed(tc.body, tc.into(), tc.gvk); named != tc.named {
			t.Errorf("%s: decoded in place %v, want %v", tc.name, named, tc.named)
		}
	}
}
