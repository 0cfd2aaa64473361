package server

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const applyType = "application/apply-patch+yaml"

func namespaceOf(t *testing.T, r response) *corev1.Namespace {
	t.Helper()
	ns := &corev1.Namespace{}
	if err := json.Unmarshal(r.body, ns); err != nil {
		t.Fatalf("decoding Namespace from %d %s: %v", r.code, r.body, err)
	}
	return ns
}

// managers is each managedFields entry as manager/operation/subresource, and its fields.
func managers(entries []metav1.ManagedFieldsEntry) map[string]string {
	out := map[string]string{}
	for _, e := range entries {
		fields := ""
		if e.FieldsV1 != nil {
			fields = string(e.FieldsV1.GetRawBytes())
		}
		out[e.Manager+"/"+string(e.Operation)+"/"+e.Subresource] = fields
	}
	return out
}

// Server-side apply as Kubernetes serves it: an apply creates, records its manager as Apply and
// owns the fields it set; another manager setting one of them conflicts with Kubernetes' 409
// naming manager and field unless it forces; every other write records its manager as Update.
func TestServerSideApply(t *testing.T) {
	e := newEnv(t)
	const path = "/api/v1/namespaces/team"
	apply := func(manager, body string, query string) response {
		return e.do("PATCH", path+"?fieldManager="+manager+query, body, "Content-Type", applyType)
	}

	r := apply("alice", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  labels: {owner: alice, tier: gold}\n", "")
	if r.code != http.StatusCreated {
		t.Fatalf("apply of an absent object: %d %s, want 201", r.code, r.body)
	}
	ns := namespaceOf(t, r)
	m := managers(ns.ManagedFields)
	if got := m["alice/Apply/"]; got != `{"f:metadata":{"f:labels":{"f:owner":{},"f:tier":{}}}}` {
		t.Fatalf("alice's fields = %q; managedFields %+v", got, ns.ManagedFields)
	}
	if at := ns.ManagedFields[0].Time; at == nil || !at.Time.Equal(start) {
		t.Fatalf("managedFields time = %v, want the server clock's %v", at, start)
	}

	e.clock.Add(time.Minute)
	r = apply("bob", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  labels: {tier: silver}\n", "")
	s := r.expectStatus(t, http.StatusConflict, metav1.StatusReasonConflict)
	if s.Message != `Apply failed with 1 conflict: conflict with "alice": .metadata.labels.tier` {
		t.Fatalf("conflict message = %q", s.Message)
	}
	if len(s.Details.Causes) != 1 || s.Details.Causes[0].Type != metav1.CauseTypeFieldManagerConflict || s.Details.Causes[0].Field != ".metadata.labels.tier" {
		t.Fatalf("conflict causes = %+v", s.Details.Causes)
	}

	r = apply("bob", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  labels: {tier: silver}\n", "&force=true")
	if r.code != http.StatusOK {
		t.Fatalf("forced apply: %d %s", r.code, r.body)
	}
	ns = namespaceOf(t, r)
	m = managers(ns.ManagedFields)
	if ns.Labels["tier"] != "silver" || ns.Labels["owner"] != "alice" {
		t.Fatalf("labels after forced apply = %v", ns.Labels)
	}
	if m["alice/Apply/"] != `{"f:metadata":{"f:labels":{"f:owner":{}}}}` || m["bob/Apply/"] != `{"f:metadata":{"f:labels":{"f:tier":{}}}}` {
		t.Fatalf("ownership after forced apply = %v", m)
	}

	// alice applies without tier: she owned it no more, so it stays; without owner, she drops it.
	r = apply("alice", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n", "")
	if r.code != http.StatusOK {
		t.Fatalf("re-apply: %d %s", r.code, r.body)
	}
	if ns = namespaceOf(t, r); ns.Labels["tier"] != "silver" || ns.Labels["owner"] != "" {
		t.Fatalf("labels after alice dropped hers = %v", ns.Labels)
	}

	// A merge patch records its manager from the User-Agent, as an Update.
	r = e.do("PATCH", path, `{"metadata":{"annotations":{"note":"x"}}}`, "Content-Type", "application/merge-patch+json", "User-Agent", "kubectl/v1.34.4 (linux/amd64)")
	if r.code != http.StatusOK {
		t.Fatalf("merge patch: %d %s", r.code, r.body)
	}
	if m = managers(namespaceOf(t, r).ManagedFields); m["kubectl/Update/"] != `{"f:metadata":{"f:annotations":{".":{},"f:note":{}}}}` {
		t.Fatalf("managedFields after a merge patch = %v", m)
	}

	// A status write of the object as read records its subresource, and keeps the entries of
	// fields it did not touch.
	ns = namespaceOf(t, e.do("GET", path, nil))
	ns.Status.Conditions = []corev1.NamespaceCondition{{Type: "Ready", Status: corev1.ConditionTrue}}
	r = e.do("PUT", path+"/status?fieldManager=ctl", ns)
	if r.code != http.StatusOK {
		t.Fatalf("status update: %d %s", r.code, r.body)
	}
	if m = managers(namespaceOf(t, r).ManagedFields); m["ctl/Update/status"] == "" || m["bob/Apply/"] == "" || m["kubectl/Update/"] == "" {
		t.Fatalf("managedFields after a status update = %v", m)
	}

	// An update whose body has no managedFields keeps the object's; an empty list strips them,
	// that update's own entry included, as Kubernetes documents.
	r = e.do("PUT", path+"?fieldManager=ed", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team","labels":{"tier":"silver","x":"y"},"annotations":{"note":"x"}}}`)
	if m = managers(namespaceOf(t, r).ManagedFields); r.code != http.StatusOK || m["bob/Apply/"] == "" || m["ed/Update/"] == "" {
		t.Fatalf("update: %d, managedFields %v", r.code, m)
	}
	r = e.do("PUT", path+"?fieldManager=ed", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team","managedFields":[]}}`)
	if m = managers(namespaceOf(t, r).ManagedFields); r.code != http.StatusOK || len(m) != 0 {
		t.Fatalf("reset: %d, managedFields %v", r.code, m)
	}
}

func TestServerSideApplyErrors(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, path, contentType, body string
		code                          int
		reason                        metav1.StatusReason
		message                       string
	}{
		{"an apply names its manager", "/api/v1/namespaces/team", applyType, "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n",
			422, metav1.StatusReasonInvalid, `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`},
		{"force is for applies only", "/api/v1/namespaces/default?force=true", "application/merge-patch+json", `{}`,
			422, metav1.StatusReasonInvalid, `PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch`},
		{"a manager name is at most 128 characters", "/api/v1/namespaces/default?fieldManager=" + string(make([]byte, 129)), "application/merge-patch+json", `{}`,
			422, metav1.StatusReasonInvalid, ""},
		{"the applied name is the URL's", "/api/v1/namespaces/team?fieldManager=a", applyType, "apiVersion: v1\nkind: Namespace\nmetadata: {name: other}\n",
			400, metav1.StatusReasonBadRequest, "the name of the object (other) does not match the name on the URL (team)"},
		{"the applied version is the served one", "/api/v1/namespaces/team?fieldManager=a", applyType, "apiVersion: v2\nkind: Namespace\nmetadata: {name: team}\n",
			400, metav1.StatusReasonBadRequest, ""},
		{"an unknown patch type is 415", "/api/v1/namespaces/default", "application/apply-patch+cbor", `{}`,
			415, metav1.StatusReasonUnsupportedMediaType, "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := tc.path
			if tc.name == "a manager name is at most 128 characters" {
				long := make([]byte, 129)
				for i := range long {
					long[i] = 'm'
				}
				path = "/api/v1/namespaces/default?fieldManager=" + string(long)
			}
			s := e.do("PATCH", path, tc.body, "Content-Type", tc.contentType).expectStatus(t, tc.code, tc.reason)
			if tc.message != "" && s.Message != tc.message {
				t.Fatalf("message = %q, want %q", s.Message, tc.message)
			}
		})
	}
}
