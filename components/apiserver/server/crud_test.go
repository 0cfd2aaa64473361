package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestCreateAnswers201WithServerFields(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", eventsPath, sample("sample-1"))
	if r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	got := r.event(t)
	if got.Kind != "Event" || got.APIVersion != "events.orch.io/v1" {
		t.Errorf("TypeMeta = %+v", got.TypeMeta)
	}
	if got.Namespace != "default" || got.UID == "" || got.ResourceVersion == "" {
		t.Errorf("namespace/uid/resourceVersion not set: %+v", got.ObjectMeta)
	}
	if !got.CreationTimestamp.Time.Equal(start) {
		t.Errorf("creationTimestamp = %v, want the injected clock's %v", got.CreationTimestamp, start)
	}
	if got.Labels["app"] != "web" || got.Note != "sample event sample-1" {
		t.Errorf("fields not kept: %+v", got)
	}
	read := e.do("GET", eventsPath+"/sample-1", nil)
	if read.code != http.StatusOK {
		t.Fatalf("get: %d %s", read.code, read.body)
	}
	back := read.event(t)
	if back.UID != got.UID || back.ResourceVersion != got.ResourceVersion {
		t.Errorf("get answered %+v, create %+v", back.ObjectMeta, got.ObjectMeta)
	}
}

func TestCreateGenerateName(t *testing.T) {
	e := newEnv(t)
	body := sample("")
	body["metadata"] = map[string]any{"generateName": "web-"}
	r := e.do("POST", eventsPath, body)
	if r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	got := r.event(t)
	if !strings.HasPrefix(got.Name, "web-") || len(got.Name) != len("web-")+5 {
		t.Errorf("generated name = %q", got.Name)
	}
}

func TestCreateErrors(t *testing.T) {
	e := newEnv(t)
	e.create("taken")
	otherNamespace := sample("x")
	otherNamespace["metadata"] = map[string]any{"name": "x", "namespace": "kube-other"}
	withRV := sample("x")
	withRV["metadata"] = map[string]any{"name": "x", "resourceVersion": "5"}
	noName := sample("")
	noName["metadata"] = map[string]any{}
	tests := []struct {
		name        string
		contentType string
		body        any
		code        int
		reason      metav1.StatusReason
		message     string
	}{
		{"already exists", "application/json", sample("taken"), 409, metav1.StatusReasonAlreadyExists, `events.events.orch.io "taken" already exists`},
		{"namespace mismatch", "application/json", otherNamespace, 400, metav1.StatusReasonBadRequest, "the namespace of the provided object does not match the namespace sent on the request"},
		{"malformed JSON", "application/json", `{"apiVersion":"events.orch.io/v`, 400, metav1.StatusReasonBadRequest, "the object provided is unrecognized (must be of type Event)"},
		{"wrong kind", "application/json", `{"kind":"Pod","apiVersion":"events.orch.io/v1"}`, 400, metav1.StatusReasonBadRequest, `kind "Pod" is not Event`},
		{"wrong group-version", "application/json", `{"kind":"Event","apiVersion":"events.k8s.io/v1"}`, 400, metav1.StatusReasonBadRequest, "does not match the expected API version (events.orch.io/v1)"},
		{"resourceVersion on create", "application/json", withRV, 400, metav1.StatusReasonBadRequest, "resourceVersion should not be set on objects to be created"},
		{"unsupported media type", "text/plain", "hello", 415, metav1.StatusReasonUnsupportedMediaType, "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml"},
		{"no name", "application/json", noName, 422, metav1.StatusReasonInvalid, "metadata.name: Required value: name or generateName is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do("POST", eventsPath, tt.body, "Content-Type", tt.contentType)
			s := r.expectStatus(t, tt.code, tt.reason)
			if !strings.Contains(s.Message, tt.message) {
				t.Errorf("message = %q, want it to contain %q", s.Message, tt.message)
			}
		})
	}
}

func TestCreateYAML(t *testing.T) {
	e := newEnv(t)
	body := `apiVersion: events.orch.io/v1
kind: Event
metadata: {name: from-yaml}
eventTime: "2026-11-21T23:03:57.523342Z"
reportingController: orch.io/test
reportingInstance: i-1
action: Started
reason: Pulled
type: Warning
regarding: {kind: Pod, namespace: default, name: web-0}
`
	r := e.do("POST", eventsPath, body, "Content-Type", "application/yaml")
	if r.code != http.StatusCreated || r.event(t).Type != "Warning" {
		t.Fatalf("yaml create: %d %s", r.code, r.body)
	}
}

// Every rule of the Event table answers 422 Invalid with one cause per broken rule at its path.
func TestCreateValidationCauses(t *testing.T) {
	e := newEnv(t)
	long := strings.Repeat("x", 129)
	tests := []struct {
		name   string
		mutate func(map[string]any)
		causes []metav1.StatusCause
	}{
		{"eventTime required", func(b map[string]any) { delete(b, "eventTime") },
			[]metav1.StatusCause{{Type: "FieldValueRequired", Message: "Required value", Field: "eventTime"}}},
		{"action required", func(b map[string]any) { delete(b, "action") },
			[]metav1.StatusCause{{Type: "FieldValueRequired", Message: "Required value", Field: "action"}}},
		{"reason at most 128", func(b map[string]any) { b["reason"] = long },
			[]metav1.StatusCause{{Type: "FieldValueInvalid", Message: `Invalid value: "": can have at most 128 characters`, Field: "reason"}}},
		{"action at most 128", func(b map[string]any) { b["action"] = long },
			[]metav1.StatusCause{{Type: "FieldValueInvalid", Message: `Invalid value: "": can have at most 128 characters`, Field: "action"}}},
		{"reportingInstance at most 128", func(b map[string]any) { b["reportingInstance"] = long },
			[]metav1.StatusCause{{Type: "FieldValueInvalid", Message: `Invalid value: "": can have at most 128 characters`, Field: "reportingInstance"}}},
		{"reportingController required", func(b map[string]any) { delete(b, "reportingController") },
			[]metav1.StatusCause{{Type: "FieldValueRequired", Message: "Required value", Field: "reportingController"}}},
		{"reportingInstance required", func(b map[string]any) { delete(b, "reportingInstance") },
			[]metav1.StatusCause{{Type: "FieldValueRequired", Message: "Required value", Field: "reportingInstance"}}},
		{"note at most 1 kB", func(b map[string]any) { b["note"] = strings.Repeat("n", 1025) },
			[]metav1.StatusCause{{Type: "FieldValueInvalid", Message: `Invalid value: "": can have at most 1024 characters`, Field: "note"}}},
		{"type Normal or Warning", func(b map[string]any) { b["type"] = "Sideways" },
			[]metav1.StatusCause{{Type: "FieldValueInvalid", Message: `Invalid value: "": has invalid value: Sideways`, Field: "type"}}},
		{"series count at least 2", func(b map[string]any) {
			b["series"] = map[string]any{"count": 1, "lastObservedTime": "2026-11-21T23:03:57.523342Z"}
		}, []metav1.StatusCause{{Type: "FieldValueInvalid", Message: `Invalid value: "": should be at least 2`, Field: "series.count"}}},
		{"series lastObservedTime required", func(b map[string]any) { b["series"] = map[string]any{"count": 2} },
			[]metav1.StatusCause{{Type: "FieldValueRequired", Message: "Required value", Field: "series.lastObservedTime"}}},
		{"deprecatedCount unset", func(b map[string]any) { b["deprecatedCount"] = 3 },
			[]metav1.StatusCause{{Type: "FieldValueInvalid", Message: `Invalid value: "": needs to be unset`, Field: "deprecatedCount"}}},
		{"deprecatedSource unset", func(b map[string]any) { b["deprecatedSource"] = map[string]any{"component": "kubelet"} },
			[]metav1.StatusCause{{Type: "FieldValueInvalid", Message: `Invalid value: "": needs to be unset`, Field: "deprecatedSource"}}},
		{"deprecatedFirstTimestamp unset", func(b map[string]any) { b["deprecatedFirstTimestamp"] = "2026-11-21T23:00:00Z" },
			[]metav1.StatusCause{{Type: "FieldValueInvalid", Message: `Invalid value: "": needs to be unset`, Field: "deprecatedFirstTimestamp"}}},
		{"deprecatedLastTimestamp unset", func(b map[string]any) { b["deprecatedLastTimestamp"] = "2026-11-21T23:00:00Z" },
			[]metav1.StatusCause{{Type: "FieldValueInvalid", Message: `Invalid value: "": needs to be unset`, Field: "deprecatedLastTimestamp"}}},
		{"name a DNS subdomain", func(b map[string]any) { b["metadata"] = map[string]any{"name": "Bad_Name"} },
			[]metav1.StatusCause{{Type: "FieldValueInvalid", Message: `Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`, Field: "metadata.name"}}},
		{"five mistakes, five causes", func(b map[string]any) {
			delete(b, "eventTime")
			delete(b, "action")
			b["reason"] = long
			b["type"] = "Sideways"
			b["deprecatedCount"] = 2
		}, []metav1.StatusCause{
			{Type: "FieldValueRequired", Message: "Required value", Field: "eventTime"},
			{Type: "FieldValueRequired", Message: "Required value", Field: "action"},
			{Type: "FieldValueInvalid", Message: `Invalid value: "": can have at most 128 characters`, Field: "reason"},
			{Type: "FieldValueInvalid", Message: `Invalid value: "": has invalid value: Sideways`, Field: "type"},
			{Type: "FieldValueInvalid", Message: `Invalid value: "": needs to be unset`, Field: "deprecatedCount"},
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := sample(fmt.Sprintf("bad-%d", i))
			tt.mutate(body)
			s := e.do("POST", eventsPath, body).expectStatus(t, 422, metav1.StatusReasonInvalid)
			if s.Details == nil || s.Details.Kind != "Event" {
				t.Fatalf("details = %+v", s.Details)
			}
			if len(s.Details.Causes) != len(tt.causes) {
				t.Fatalf("causes = %+v, want %+v", s.Details.Causes, tt.causes)
			}
			for _, want := range tt.causes {
				found := false
				for _, got := range s.Details.Causes {
					found = found || got == want
				}
				if !found {
					t.Errorf("missing cause %+v in %+v", want, s.Details.Causes)
				}
			}
			if !strings.HasPrefix(s.Message, "Event \"") || !strings.Contains(s.Message, "is invalid") {
				t.Errorf("message = %q", s.Message)
			}
		})
	}
	if got := e.do("GET", eventsPath, nil).list(t); len(got.Items) != 0 {
		t.Fatalf("an invalid create stored something: %+v", got.Items)
	}
}

func TestGetAndDeleteNotFound(t *testing.T) {
	e := newEnv(t)
	for _, method := range []string{"GET", "DELETE"} {
		s := e.do(method, eventsPath+"/does-not-exist", nil).expectStatus(t, 404, metav1.StatusReasonNotFound)
		if s.Message != `events.events.orch.io "does-not-exist" not found` || s.Details.Name != "does-not-exist" || s.Details.Group != "events.orch.io" || s.Details.Kind != "events" {
			t.Errorf("%s: Status = %+v", method, s)
		}
	}
}

func TestUpdate(t *testing.T) {
	e := newEnv(t)
	created := e.create("sample-1")

	t.Run("series may change, 200 with a new resourceVersion", func(t *testing.T) {
		next := sample("sample-1")
		next["series"] = map[string]any{"count": 2, "lastObservedTime": "2026-11-21T23:04:57.000000Z"}
		next["metadata"] = map[string]any{"name": "sample-1", "resourceVersion": created.ResourceVersion, "labels": map[string]any{"app": "db"}}
		r := e.do("PUT", eventsPath+"/sample-1", next)
		if r.code != 200 {
			t.Fatalf("update: %d %s", r.code, r.body)
		}
		got := r.event(t)
		if got.Series == nil || got.Series.Count != 2 || got.Labels["app"] != "db" || got.ResourceVersion == created.ResourceVersion || got.UID != created.UID {
			t.Fatalf("updated = %+v", got)
		}
	})
	t.Run("stale resourceVersion is 409 Conflict", func(t *testing.T) {
		next := sample("sample-1")
		next["metadata"] = map[string]any{"name": "sample-1", "resourceVersion": created.ResourceVersion}
		s := e.do("PUT", eventsPath+"/sample-1", next).expectStatus(t, 409, metav1.StatusReasonConflict)
		want := `Operation cannot be fulfilled on events.events.orch.io "sample-1": the object has been modified; please apply your changes to the latest version and try again`
		if s.Message != want {
			t.Errorf("message = %q", s.Message)
		}
	})
	t.Run("every field but series, labels and annotations is immutable", func(t *testing.T) {
		for field, value := range map[string]any{
			"reason": "Changed", "action": "Stopped", "note": "changed", "type": "Warning",
			"reportingController": "orch.io/other", "reportingInstance": "other",
			"eventTime": "2026-11-21T23:59:00.000000Z",
			"regarding": map[string]any{"kind": "Pod", "namespace": "default", "name": "web-1"},
			"related":   map[string]any{"kind": "Node", "name": "n1"},
		} {
			next := sample("sample-1")
			next[field] = value
			s := e.do("PUT", eventsPath+"/sample-1", next).expectStatus(t, 422, metav1.StatusReasonInvalid)
			if len(s.Details.Causes) != 1 || s.Details.Causes[0].Field != field || !strings.HasSuffix(s.Details.Causes[0].Message, "field is immutable") {
				t.Errorf("%s: causes = %+v", field, s.Details.Causes)
			}
		}
	})
	t.Run("a changed series is validated again", func(t *testing.T) {
		next := sample("sample-1")
		next["series"] = map[string]any{"count": 1, "lastObservedTime": "2026-11-21T23:04:57.000000Z"}
		s := e.do("PUT", eventsPath+"/sample-1", next).expectStatus(t, 422, metav1.StatusReasonInvalid)
		if s.Details.Causes[0].Field != "series.count" {
			t.Errorf("causes = %+v", s.Details.Causes)
		}
	})
	t.Run("name must match the URL", func(t *testing.T) {
		e.do("PUT", eventsPath+"/sample-1", sample("other")).expectStatus(t, 400, metav1.StatusReasonBadRequest)
	})
	t.Run("update of a missing event creates it: 201", func(t *testing.T) {
		r := e.do("PUT", eventsPath+"/fresh", sample("fresh"))
		if r.code != http.StatusCreated {
			t.Fatalf("put-create: %d %s", r.code, r.body)
		}
	})
}

func TestPatchTypes(t *testing.T) {
	e := newEnv(t)
	e.create("sample-2")
	tests := []struct {
		contentType string
		patch       string
		count       int32
	}{
		{"application/merge-patch+json", `{"series":{"count":2,"lastObservedTime":"2026-11-21T23:03:57.523342Z"}}`, 2},
		{"application/json-patch+json", `[{"op":"replace","path":"/series/count","value":3}]`, 3},
		{"application/strategic-merge-patch+json", `{"series":{"count":4}}`, 4},
	}
	for _, tt := range tests {
		t.Run(tt.contentType, func(t *testing.T) {
			r := e.do("PATCH", eventsPath+"/sample-2", tt.patch, "Content-Type", tt.contentType)
			if r.code != 200 {
				t.Fatalf("patch: %d %s", r.code, r.body)
			}
			if got := r.event(t); got.Series == nil || got.Series.Count != tt.count {
				t.Fatalf("series = %+v", got.Series)
			}
		})
	}
	t.Run("unsupported patch type is 415", func(t *testing.T) {
		e.do("PATCH", eventsPath+"/sample-2", `{}`, "Content-Type", "application/apply-patch+cbor").
			expectStatus(t, 415, metav1.StatusReasonUnsupportedMediaType)
	})
	t.Run("patching an immutable field is 422", func(t *testing.T) {
		e.do("PATCH", eventsPath+"/sample-2", `{"reason":"Changed"}`, "Content-Type", "application/merge-patch+json").
			expectStatus(t, 422, metav1.StatusReasonInvalid)
	})
	t.Run("a patch pinning a stale resourceVersion is 409", func(t *testing.T) {
		e.do("PATCH", eventsPath+"/sample-2", `{"metadata":{"resourceVersion":"1"},"series":{"count":9}}`, "Content-Type", "application/merge-patch+json").
			expectStatus(t, 409, metav1.StatusReasonConflict)
	})
	t.Run("a broken JSON patch is 400", func(t *testing.T) {
		e.do("PATCH", eventsPath+"/sample-2", `[{"op":"replace","path":"/nope/x","value":1}]`, "Content-Type", "application/json-patch+json").
			expectStatus(t, 400, metav1.StatusReasonBadRequest)
	})
	t.Run("patch of a missing event is 404", func(t *testing.T) {
		e.do("PATCH", eventsPath+"/missing", `{}`, "Content-Type", "application/merge-patch+json").
			expectStatus(t, 404, metav1.StatusReasonNotFound)
	})
}

func TestDelete(t *testing.T) {
	e := newEnv(t)
	created := e.create("sample-w")
	t.Run("uid precondition", func(t *testing.T) {
		body := `{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{"uid":"not-the-uid"}}`
		s := e.do("DELETE", eventsPath+"/sample-w", body).expectStatus(t, 409, metav1.StatusReasonConflict)
		if !strings.Contains(s.Message, "Precondition failed: UID in precondition: not-the-uid") {
			t.Errorf("message = %q", s.Message)
		}
	})
	t.Run("resourceVersion precondition", func(t *testing.T) {
		body := `{"preconditions":{"resourceVersion":"1"}}`
		s := e.do("DELETE", eventsPath+"/sample-w", body).expectStatus(t, 409, metav1.StatusReasonConflict)
		if !strings.Contains(s.Message, "Precondition failed: ResourceVersion in precondition: 1") {
			t.Errorf("message = %q", s.Message)
		}
	})
	t.Run("200 with a Success Status", func(t *testing.T) {
		body := fmt.Sprintf(`{"preconditions":{"uid":%q,"resourceVersion":%q}}`, created.UID, created.ResourceVersion)
		r := e.do("DELETE", eventsPath+"/sample-w", body)
		if r.code != 200 {
			t.Fatalf("delete: %d %s", r.code, r.body)
		}
		s := r.status(t)
		if s.Status != metav1.StatusSuccess || s.Details.Name != "sample-w" || s.Details.UID != created.UID || s.Details.Group != "events.orch.io" || s.Details.Kind != "events" {
			t.Fatalf("Status = %+v", s)
		}
		e.do("GET", eventsPath+"/sample-w", nil).expectStatus(t, 404, metav1.StatusReasonNotFound)
	})
}

func TestDeleteCollection(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"a", "b", "c"} {
		e.create(n)
	}
	other := sample("d")
	other["metadata"] = map[string]any{"name": "d", "labels": map[string]any{"app": "db"}}
	if r := e.do("POST", eventsPath, other); r.code != 201 {
		t.Fatal(r.code, string(r.body))
	}
	r := e.do("DELETE", eventsPath+"?labelSelector=app%3Dweb", nil)
	if r.code != 200 {
		t.Fatalf("deletecollection: %d %s", r.code, r.body)
	}
	deleted := r.list(t)
	if deleted.Kind != "EventList" || len(deleted.Items) != 3 {
		t.Fatalf("deleted = %+v", deleted)
	}
	left := e.do("GET", eventsPath, nil).list(t)
	if len(left.Items) != 1 || left.Items[0].Name != "d" {
		t.Fatalf("left = %+v", left.Items)
	}
}

// dryRun=All validates and answers as the real operation would, and stores nothing.
func TestDryRun(t *testing.T) {
	e := newEnv(t)
	kept := e.create("kept")
	before := e.do("GET", eventsPath, nil).list(t).ResourceVersion

	r := e.do("POST", eventsPath+"?dryRun=All", sample("dry"))
	if r.code != 201 || r.event(t).Name != "dry" {
		t.Fatalf("dry create: %d %s", r.code, r.body)
	}
	bad := sample("dry-bad")
	bad["type"] = "Sideways"
	e.do("POST", eventsPath+"?dryRun=All", bad).expectStatus(t, 422, metav1.StatusReasonInvalid)

	next := sample("kept")
	next["series"] = map[string]any{"count": 2, "lastObservedTime": "2026-11-21T23:04:57.000000Z"}
	if r := e.do("PUT", eventsPath+"/kept?dryRun=All", next); r.code != 200 || r.event(t).Series == nil {
		t.Fatalf("dry update: %d %s", r.code, r.body)
	}
	if r := e.do("PATCH", eventsPath+"/kept?dryRun=All", `{"metadata":{"labels":{"x":"y"}}}`, "Content-Type", "application/merge-patch+json"); r.code != 200 || r.event(t).Labels["x"] != "y" {
		t.Fatalf("dry patch: %d %s", r.code, r.body)
	}
	if r := e.do("DELETE", eventsPath+"/kept?dryRun=All", nil); r.code != 200 {
		t.Fatalf("dry delete: %d %s", r.code, r.body)
	}
	if r := e.do("DELETE", eventsPath+"?dryRun=All", nil); r.code != 200 || len(r.list(t).Items) != 1 {
		t.Fatalf("dry deletecollection: %d %s", r.code, r.body)
	}
	e.do("POST", eventsPath+"?dryRun=Some", sample("x")).expectStatus(t, 400, metav1.StatusReasonBadRequest)

	after := e.do("GET", eventsPath, nil).list(t)
	if after.ResourceVersion != before || len(after.Items) != 1 || after.Items[0].ResourceVersion != kept.ResourceVersion || after.Items[0].Series != nil {
		t.Fatalf("dry runs changed storage: before rv %s, after %+v", before, after)
	}
}

func TestPrettyAndFieldValidation(t *testing.T) {
	e := newEnv(t)
	e.create("p")
	if r := e.do("GET", eventsPath+"/p?pretty=true", nil); !strings.Contains(string(r.body), "\n  \"metadata\": {") {
		t.Errorf("pretty=true not indented: %s", r.body)
	}
	if r := e.do("GET", eventsPath+"/p", nil); strings.Contains(string(r.body), "\n  ") {
		t.Errorf("default answer indented: %s", r.body)
	}
	unknown := sample("u1")
	unknown["bogus"] = 1
	s := e.do("POST", eventsPath+"?fieldValidation=Strict", unknown).expectStatus(t, 400, metav1.StatusReasonBadRequest)
	if s.Message != `strict decoding error: unknown field "bogus"` {
		t.Errorf("strict message = %q", s.Message)
	}
	r := e.do("POST", eventsPath, unknown)
	if r.code != 201 || r.header.Get("Warning") != `299 - "unknown field \"bogus\""` {
		t.Errorf("default (Warn): %d, Warning %q", r.code, r.header.Get("Warning"))
	}
	unknown["metadata"] = map[string]any{"name": "u2"}
	if r := e.do("POST", eventsPath+"?fieldValidation=Ignore", unknown); r.code != 201 || r.header.Get("Warning") != "" {
		t.Errorf("Ignore: %d, Warning %q", r.code, r.header.Get("Warning"))
	}
	dup := `{"apiVersion":"events.orch.io/v1","kind":"Event","metadata":{"name":"dup"},"reason":"A","reason":"B"}`
	if s := e.do("POST", eventsPath+"?fieldValidation=Strict", dup).expectStatus(t, 400, metav1.StatusReasonBadRequest); !strings.Contains(s.Message, `duplicate field "reason"`) {
		t.Errorf("duplicate message = %q", s.Message)
	}
}

func TestRequestErrors(t *testing.T) {
	e := newEnv(t)
	t.Run("413 body over 3 MiB", func(t *testing.T) {
		body := sample("big")
		body["note"] = strings.Repeat("x", 3*1024*1024)
		e.do("POST", eventsPath, body).expectStatus(t, 413, metav1.StatusReasonRequestEntityTooLarge)
	})
	t.Run("405 method not allowed", func(t *testing.T) {
		s := e.do("PUT", eventsPath, sample("x")).expectStatus(t, 405, metav1.StatusReasonMethodNotAllowed)
		if s.Message != "the server does not allow this method on the requested resource" {
			t.Errorf("message = %q", s.Message)
		}
	})
	t.Run("404 unknown path", func(t *testing.T) {
		e.do("GET", "/apis/nothing.orch.io/v1/things", nil).expectStatus(t, 404, metav1.StatusReasonNotFound)
	})
	t.Run("406 nothing acceptable", func(t *testing.T) {
		e.do("GET", eventsPath, nil, "Accept", "application/cbor").expectStatus(t, 406, metav1.StatusReasonNotAcceptable)
		if r := e.do("GET", eventsPath, nil, "Accept", "application/vnd.orch.protobuf"); r.code != 200 || !strings.HasPrefix(string(r.body), "k8s\x00") {
			t.Errorf("events in protobuf: %d %q", r.code, r.body)
		}
	})
}
