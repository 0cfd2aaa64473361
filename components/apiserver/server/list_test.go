package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventsv1 "orch.io/orch/components/apis/events/v1"
)

func names(items []eventsv1.Event) string {
	var out []string
	for _, i := range items {
		out = append(out, i.Name)
	}
	return strings.Join(out, ",")
}

// Pages read one snapshot: an event created between pages does not appear in later ones.
func TestListPagesAreOneSnapshot(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"a", "b", "c", "d"} {
		e.create(n)
	}
	first := e.do("GET", eventsPath+"?limit=1", nil).list(t)
	if names(first.Items) != "a" || first.Continue == "" || first.RemainingItemCount == nil || *first.RemainingItemCount != 3 {
		t.Fatalf("first page = %s continue %q remaining %v", names(first.Items), first.Continue, first.RemainingItemCount)
	}
	e.create("b0")
	rest := e.do("GET", eventsPath+"?limit=10&continue="+url.QueryEscape(first.Continue), nil).list(t)
	if names(rest.Items) != "b,c,d" || rest.Continue != "" || rest.ResourceVersion != first.ResourceVersion {
		t.Fatalf("rest = %s (rv %s, first rv %s, continue %q)", names(rest.Items), rest.ResourceVersion, first.ResourceVersion, rest.Continue)
	}
	all := e.do("GET", "/apis/events.orch.io/v1/events", nil).list(t)
	if names(all.Items) != "a,b,b0,c,d" {
		t.Fatalf("all namespaces = %s", names(all.Items))
	}
}

func TestListContinueErrors(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"a", "b"} {
		e.create(n)
	}
	first := e.do("GET", eventsPath+"?limit=1", nil).list(t)
	t.Run("undecodable token is 400", func(t *testing.T) {
		s := e.do("GET", eventsPath+"?continue=gYGBgQ", nil).expectStatus(t, 400, metav1.StatusReasonBadRequest)
		if !strings.HasPrefix(s.Message, "invalid continue token: continue key is not valid") {
			t.Errorf("message = %q", s.Message)
		}
	})
	t.Run("a token cannot climb out of its namespace", func(t *testing.T) {
		token := encodeToken(t, `{"v":"meta.k8s.io/v1","rv":1,"start":"../other/x"}`)
		e.do("GET", eventsPath+"?continue="+token, nil).expectStatus(t, 400, metav1.StatusReasonBadRequest)
	})
	t.Run("continue with resourceVersion is 400", func(t *testing.T) {
		e.do("GET", eventsPath+"?resourceVersion=5&continue="+url.QueryEscape(first.Continue), nil).expectStatus(t, 400, metav1.StatusReasonBadRequest)
	})
	t.Run("expired token is 410 with a fresh token", func(t *testing.T) {
		e.create("c")
		rev, _ := e.store.Revision(context.Background())
		if err := e.store.Compact(context.Background(), rev); err != nil {
			t.Fatal(err)
		}
		r := e.do("GET", eventsPath+"?limit=1&continue="+url.QueryEscape(first.Continue), nil)
		s := r.expectStatus(t, 410, metav1.StatusReasonExpired)
		if !strings.HasPrefix(s.Message, "The provided continue parameter is too old") || s.Continue == "" {
			t.Fatalf("Status = %+v", s)
		}
		rest := e.do("GET", eventsPath+"?continue="+url.QueryEscape(s.Continue), nil).list(t)
		if names(rest.Items) != "b,c" {
			t.Fatalf("inconsistent continuation = %s", names(rest.Items))
		}
	})
}

func encodeToken(t *testing.T, raw string) string {
	t.Helper()
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

func TestListResourceVersionRules(t *testing.T) {
	e := newEnv(t)
	a := e.create("a")
	e.create("b")
	t.Run("Exact reads the past", func(t *testing.T) {
		l := e.do("GET", eventsPath+"?resourceVersionMatch=Exact&resourceVersion="+a.ResourceVersion, nil).list(t)
		if names(l.Items) != "a" || l.ResourceVersion != a.ResourceVersion {
			t.Fatalf("exact = %s at %s", names(l.Items), l.ResourceVersion)
		}
	})
	t.Run("too large is 504", func(t *testing.T) {
		s := e.do("GET", eventsPath+"?resourceVersion=999999999", nil).expectStatus(t, 504, metav1.StatusReasonTimeout)
		if !strings.HasPrefix(s.Message, "Timeout: Too large resource version: 999999999, current: ") || s.Details.Causes[0].Type != metav1.CauseTypeResourceVersionTooLarge {
			t.Fatalf("Status = %+v", s)
		}
	})
	t.Run("unparsable is 400", func(t *testing.T) {
		e.do("GET", eventsPath+"?resourceVersion=abc", nil).expectStatus(t, 400, metav1.StatusReasonBadRequest)
	})
	t.Run("match without version is 400", func(t *testing.T) {
		e.do("GET", eventsPath+"?resourceVersionMatch=Exact", nil).expectStatus(t, 400, metav1.StatusReasonBadRequest)
	})
	t.Run("Exact on a compacted version is 410", func(t *testing.T) {
		rev, _ := e.store.Revision(context.Background())
		if err := e.store.Compact(context.Background(), rev); err != nil {
			t.Fatal(err)
		}
		e.do("GET", eventsPath+"?resourceVersionMatch=Exact&resourceVersion="+a.ResourceVersion, nil).expectStatus(t, 410, metav1.StatusReasonExpired)
	})
}

func TestListSelectors(t *testing.T) {
	e := newEnv(t)
	web := sample("w1")
	db := sample("d1")
	db["metadata"] = map[string]any{"name": "d1", "labels": map[string]any{"app": "db"}}
	db["type"] = "Warning"
	db["reason"] = "BackOff"
	db["reportingController"] = "orch.io/orchlet"
	db["regarding"] = map[string]any{"kind": "Node", "name": "n1", "namespace": "default", "uid": "u-n1"}
	for _, b := range []map[string]any{web, db} {
		if r := e.do("POST", eventsPath, b); r.code != 201 {
			t.Fatal(r.code, string(r.body))
		}
	}
	tests := []struct{ query, want string }{
		{"labelSelector=app%3Dweb", "w1"},
		{"labelSelector=app+in+(db,cache)", "d1"},
		{"labelSelector=app!%3Dweb", "d1"},
		{"fieldSelector=metadata.name%3Dw1", "w1"},
		{"fieldSelector=metadata.namespace%3Ddefault", "d1,w1"},
		{"fieldSelector=type%3DWarning", "d1"},
		{"fieldSelector=reason%3DPulled", "w1"},
		{"fieldSelector=reportingController%3Dorch.io/orchlet", "d1"},
		{"fieldSelector=regarding.kind%3DNode", "d1"},
		{"fieldSelector=regarding.name%3Dweb-0", "w1"},
		{"fieldSelector=regarding.namespace%3Ddefault", "d1,w1"},
		{"fieldSelector=regarding.uid%3Du-n1", "d1"},
		{"fieldSelector=type!%3DWarning", "w1"},
		{"fieldSelector=type%3DWarning&labelSelector=app%3Dweb", ""},
		{"fieldSelector=type%3DNormal&limit=1", "w1"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			r := e.do("GET", eventsPath+"?"+tt.query, nil)
			if got := names(r.list(t).Items); got != tt.want {
				t.Fatalf("%s: got %q, want %q (%s)", tt.query, got, tt.want, r.body)
			}
		})
	}
	t.Run("unknown field label is 400", func(t *testing.T) {
		s := e.do("GET", eventsPath+"?fieldSelector=spec.foo%3Dx", nil).expectStatus(t, 400, metav1.StatusReasonBadRequest)
		if s.Message != "field label not supported: spec.foo" {
			t.Errorf("message = %q", s.Message)
		}
	})
	t.Run("bad label selector is 400", func(t *testing.T) {
		e.do("GET", eventsPath+"?labelSelector=app%3D%3D%3D", nil).expectStatus(t, 400, metav1.StatusReasonBadRequest)
	})
}

func TestListRevisionIsStoreRevision(t *testing.T) {
	e := newEnv(t)
	empty := e.do("GET", eventsPath, nil)
	l := empty.list(t)
	if l.Kind != "EventList" || l.APIVersion != "events.orch.io/v1" || l.Items == nil || !strings.Contains(string(empty.body), `"items":[]`) {
		t.Fatalf("empty list = %s", empty.body)
	}
	created := e.create("a")
	after := e.do("GET", eventsPath, nil).list(t)
	if after.ResourceVersion != created.ResourceVersion {
		t.Fatalf("list rv %s, last write %s", after.ResourceVersion, created.ResourceVersion)
	}
	if n, err := strconv.Atoi(after.ResourceVersion); err != nil || n <= 0 {
		t.Fatalf("resourceVersion %q is not a positive integer", after.ResourceVersion)
	}
	if after.Items[0].Kind != "" {
		t.Errorf("list items carry kind %q; Kubernetes leaves it to the list", after.Items[0].Kind)
	}
}

// A note of up to 64 kB stored by an earlier writer reads back without error.
func TestLongNoteReadsBack(t *testing.T) {
	e := newEnv(t)
	created := e.create("long")
	note := strings.Repeat("n", 64*1024)
	r := e.do("GET", eventsPath+"/long", nil)
	var raw map[string]any
	if err := json.Unmarshal(r.body, &raw); err != nil {
		t.Fatal(err)
	}
	raw["note"] = note
	delete(raw["metadata"].(map[string]any), "resourceVersion")
	data, _ := json.Marshal(raw)
	rev, _ := strconv.ParseInt(created.ResourceVersion, 10, 64)
	if _, err := e.store.Update(context.Background(), "/registry/events.orch.io/events/default/long", rev, data, 0); err != nil {
		t.Fatal(err)
	}
	got := e.do("GET", eventsPath+"/long", nil)
	if got.code != 200 || got.event(t).Note != note {
		t.Fatalf("get of a 64 kB note: %d", got.code)
	}
	if l := e.do("GET", eventsPath, nil).list(t); len(l.Items) != 1 || len(l.Items[0].Note) != len(note) {
		t.Fatalf("list of a 64 kB note failed")
	}
	labels := e.do("PATCH", eventsPath+"/long", `{"metadata":{"labels":{"seen":"yes"}}}`, "Content-Type", "application/merge-patch+json")
	if labels.code != 200 {
		t.Fatalf("label patch of an event with a 64 kB note: %d %s", labels.code, labels.body)
	}
}
