package openapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventsv1 "orch.io/orch/components/apis/events/v1"
)

var events = Resource{
	Group: "events.orch.io", Version: "v1", Kind: "Event", Plural: "events", Namespaced: true,
	Object: reflect.TypeFor[eventsv1.Event](), List: reflect.TypeFor[eventsv1.EventList](),
	Descriptions: map[reflect.Type]Descriptions{reflect.TypeFor[eventsv1.Event](): {Type: "An event.", Fields: map[string]string{"note": "A note.", "regarding": "The object."}}},
}

func build(t *testing.T) (*Documents, *httptest.Server) {
	t.Helper()
	docs, err := Build("orch", "v0.1.0", []Resource{events})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(docs)
	t.Cleanup(srv.Close)
	return docs, srv
}

func fetch(t *testing.T, url string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body []byte
	buf := make([]byte, 1<<16)
	for {
		n, err := resp.Body.Read(buf)
		body = append(body, buf[:n]...)
		if err != nil {
			break
		}
	}
	return resp, body
}

// refsResolve walks a document and fails on a $ref naming no schema, so kubectl never meets one.
func refsResolve(t *testing.T, node any, prefix string, defs map[string]any) {
	t.Helper()
	switch n := node.(type) {
	case map[string]any:
		if ref, ok := n["$ref"].(string); ok {
			if _, found := defs[strings.TrimPrefix(ref, prefix)]; !strings.HasPrefix(ref, prefix) || !found {
				t.Errorf("$ref %q names no schema", ref)
			}
		}
		for _, v := range n {
			refsResolve(t, v, prefix, defs)
		}
	case []any:
		for _, v := range n {
			refsResolve(t, v, prefix, defs)
		}
	}
}

// The v3 root names each group-version's document with its hash; that document has the paths with
// kubectl's markers (the kind on each operation, fieldValidation on patch) and the schemas.
func TestV3(t *testing.T) {
	_, srv := build(t)
	resp, body := fetch(t, srv.URL+"/openapi/v3")
	var root struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &root); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("root: %d %s %v", resp.StatusCode, body, err)
	}
	gv := root.Paths["apis/events.orch.io/v1"].ServerRelativeURL
	if !strings.HasPrefix(gv, "/openapi/v3/apis/events.orch.io/v1?hash=") {
		t.Fatalf("root paths %+v", root.Paths)
	}
	resp, body = fetch(t, srv.URL+gv)
	if resp.Header.Get("Cache-Control") != "public, immutable" || resp.Header.Get("ETag") == "" {
		t.Errorf("headers %v", resp.Header)
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	refsResolve(t, doc, "#/components/schemas/", schemas)
	patch := doc["paths"].(map[string]any)["/apis/events.orch.io/v1/namespaces/{namespace}/events/{name}"].(map[string]any)["patch"].(map[string]any)
	if gvk := patch["x-kubernetes-group-version-kind"]; !reflect.DeepEqual(gvk, map[string]any{"group": "events.orch.io", "version": "v1", "kind": "Event"}) {
		t.Errorf("patch kind %v", gvk)
	}
	var names []string
	for _, p := range patch["parameters"].([]any) {
		names = append(names, p.(map[string]any)["name"].(string))
	}
	if !strings.Contains(strings.Join(names, ","), "fieldValidation") {
		t.Errorf("patch parameters %v lack fieldValidation", names)
	}
	event := schemas["io.orch.api.events.v1.Event"].(map[string]any)
	props := event["properties"].(map[string]any)
	if event["description"] != "An event." || !reflect.DeepEqual(props["eventTime"], map[string]any{"type": "string", "format": "date-time"}) ||
		props["note"].(map[string]any)["description"] != "A note." || props["deprecatedCount"].(map[string]any)["format"] != "int32" {
		t.Errorf("Event schema %v", event)
	}
	if _, ok := props["metadata"]; !ok {
		t.Error("Event schema lacks metadata")
	}
	if _, ok := schemas["io.k8s.api.core.v1.ObjectReference"]; !ok {
		t.Errorf("no ObjectReference schema among %v", sortedKeys(schemas))
	}
	if gvk := event["x-kubernetes-group-version-kind"]; !reflect.DeepEqual(gvk, []any{map[string]any{"group": "events.orch.io", "version": "v1", "kind": "Event"}}) {
		t.Errorf("schema kind %v", gvk)
	}
	if resp, _ := fetch(t, srv.URL+"/openapi/v3/apis/nope/v1"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown group-version: %d", resp.StatusCode)
	}
}

// /openapi/v2 is JSON by default and gnostic protobuf for client-go, both the same document, with
// an ETag that answers 304.
func TestV2(t *testing.T) {
	_, srv := build(t)
	resp, body := fetch(t, srv.URL+"/openapi/v2")
	fromJSON, err := openapi_v2.ParseDocument(body)
	if err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("JSON: %v %v", resp.Header, err)
	}
	var doc map[string]any
	_ = json.Unmarshal(body, &doc)
	refsResolve(t, doc, "#/definitions/", doc["definitions"].(map[string]any))

	resp, body = fetch(t, srv.URL+"/openapi/v2", "Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
	if resp.Header.Get("Content-Type") != "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" {
		t.Fatalf("protobuf Content-Type %q", resp.Header.Get("Content-Type"))
	}
	fromProto := &openapi_v2.Document{}
	if err := proto.Unmarshal(body, fromProto); err != nil || !proto.Equal(fromJSON, fromProto) {
		t.Fatalf("protobuf document differs from the JSON one: %v", err)
	}
	etag := resp.Header.Get("ETag")
	if resp, _ := fetch(t, srv.URL+"/openapi/v2", "Accept", protobufV2, "If-None-Match", etag); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match with the current ETag: %d, want 304", resp.StatusCode)
	}
}

// Schemas follow the JSON tags: inline embedding, skipped fields, pointers, maps and Kubernetes'
// scalar types.
func TestSchemaFollowsJSONTags(t *testing.T) {
	s := &schemas{refPrefix: "#/definitions/", defs: map[string]map[string]any{}}
	type sample struct {
		metav1.TypeMeta `json:",inline"`
		Name            string                   `json:"name"`
		Skipped         string                   `json:"-"`
		Ptr             *int64                   `json:"ptr,omitempty"`
		Labels          map[string]string        `json:"labels"`
		Refs            []corev1.ObjectReference `json:"refs"`
		Raw             []byte                   `json:"raw"`
		When            metav1.Time              `json:"when"`
	}
	s.schemaOf(reflect.TypeFor[sample]())
	props := s.defs[definitionName(reflect.TypeFor[sample]())]["properties"].(map[string]any)
	want := map[string]any{
		"apiVersion": map[string]any{"type": "string"},
		"kind":       map[string]any{"type": "string"},
		"name":       map[string]any{"type": "string"},
		"ptr":        map[string]any{"type": "integer", "format": "int64"},
		"labels":     map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
		"refs":       map[string]any{"type": "array", "items": map[string]any{"$ref": "#/definitions/io.k8s.api.core.v1.ObjectReference"}},
		"raw":        map[string]any{"type": "string", "format": "byte"},
		"when":       map[string]any{"type": "string", "format": "date-time"},
	}
	if !reflect.DeepEqual(props, want) {
		t.Fatalf("properties\n%v\nwant\n%v", props, want)
	}
}
