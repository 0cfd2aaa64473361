package server

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

func tokenFile(t *testing.T) authn.Authenticator {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(path, []byte("good-token,alice,u-1,\"admins,devs\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := authn.NewTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return tf
}

// operations is every operation of SPEC.md's Event table.
var operations = []struct{ method, path, body, contentType string }{
	{"GET", eventsPath + "/a", "", ""},
	{"GET", eventsPath, "", ""},
	{"GET", "/apis/events.orch.io/v1/events", "", ""},
	{"GET", eventsPath + "?watch=true", "", ""},
	{"POST", eventsPath, `{}`, "application/json"},
	{"PUT", eventsPath + "/a", `{}`, "application/json"},
	{"PATCH", eventsPath + "/a", `{}`, "application/merge-patch+json"},
	{"DELETE", eventsPath + "/a", "", ""},
	{"DELETE", eventsPath, "", ""},
}

func TestUnknownTokenIs401ForEveryOperation(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Authenticator = authn.Union(tokenFile(t), authn.Anonymous()) })
	for _, op := range operations {
		r := e.do(op.method, op.path, op.body, "Content-Type", op.contentType, "Authorization", "Bearer wrong")
		s := r.expectStatus(t, 401, metav1.StatusReasonUnauthorized)
		if s.Message != "Unauthorized" {
			t.Errorf("%s %s: message %q", op.method, op.path, s.Message)
		}
	}
}

func TestAnonymousDisabledIs401(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Authenticator = authn.Union(tokenFile(t)) })
	for _, op := range operations {
		e.do(op.method, op.path, op.body, "Content-Type", op.contentType).expectStatus(t, 401, metav1.StatusReasonUnauthorized)
	}
	if r := e.do("GET", eventsPath, nil, "Authorization", "Bearer good-token"); r.code != 200 {
		t.Fatalf("known token: %d %s", r.code, r.body)
	}
}

// The authenticated user reaches the authorizer with its groups.
func TestAuthorizationSeesTheUser(t *testing.T) {
	var seen authz.Attributes
	deny := authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		seen = a
		return authz.DecisionDeny, "", nil
	})
	e := newEnv(t, func(c *Config) {
		c.Authenticator = authn.Union(tokenFile(t), authn.Anonymous())
		c.Authorizer = deny
	})
	s := e.do("GET", eventsPath, nil, "Authorization", "Bearer good-token").expectStatus(t, 403, metav1.StatusReasonForbidden)
	want := `events.events.orch.io is forbidden: User "alice" cannot list resource "events" in API group "events.orch.io" in the namespace "default"`
	if s.Message != want || s.Details.Group != "events.orch.io" || s.Details.Kind != "events" {
		t.Errorf("Status = %+v", s)
	}
	if seen.User == nil || seen.User.Name != "alice" || seen.Verb != "list" || seen.Namespace != "default" || seen.Resource != "events" || !contains(seen.User.Groups, "devs") {
		t.Errorf("authorizer saw %+v", seen)
	}
	s = e.do("GET", eventsPath+"/x", nil).expectStatus(t, 403, metav1.StatusReasonForbidden)
	if !strings.Contains(s.Message, `User "system:anonymous" cannot get resource "events"`) {
		t.Errorf("anonymous get: %q", s.Message)
	}
	for _, tc := range []struct{ method, path, verb string }{
		{"GET", eventsPath + "?watch=true", "watch"},
		{"POST", eventsPath, "create"},
		{"PUT", eventsPath + "/x", "update"},
		{"PATCH", eventsPath + "/x", "patch"},
		{"DELETE", eventsPath + "/x", "delete"},
		{"DELETE", eventsPath, "deletecollection"},
	} {
		e.do(tc.method, tc.path, "{}")
		if seen.Verb != tc.verb {
			t.Errorf("%s %s: verb %q, want %q", tc.method, tc.path, seen.Verb, tc.verb)
		}
	}
}

// An authorizer that could not decide, with nothing allowing after it, is a 500 in Kubernetes' plain
// text with the error; a decision with an error that still allows lets the request through.
func TestAuthorizationErrorIs500(t *testing.T) {
	errDown := errors.New(`authorization webhook "policy": Post "https://policy/authorize": connection refused`)
	for _, tc := range []struct {
		decision authz.Decision
		want     int
	}{
		{authz.DecisionNoOpinion, http.StatusInternalServerError},
		{authz.DecisionDeny, http.StatusInternalServerError},
		{authz.DecisionAllow, http.StatusOK},
	} {
		t.Run(tc.decision.String(), func(t *testing.T) {
			e := newEnv(t, func(c *Config) {
				c.Authorizer = authz.AuthorizerFunc(func(context.Context, authz.Attributes) (authz.Decision, string, error) {
					return tc.decision, "ignored", errDown
				})
			})
			r := e.do("GET", eventsPath+"?limit=5", nil)
			if r.code != tc.want {
				t.Fatalf("code %d, want %d: %s", r.code, tc.want, r.body)
			}
			if tc.want != http.StatusInternalServerError {
				return
			}
			want := `Internal Server Error: "` + eventsPath + `?limit=5": ` + errDown.Error()
			if string(r.body) != want || r.header.Get("Content-Type") != "text/plain" || r.header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("answer %q (%s), want %q as text/plain", r.body, r.header.Get("Content-Type"), want)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Events expire --event-ttl after their last write.
func TestEventsExpireAfterTheirLastWrite(t *testing.T) {
	e := newEnv(t)
	e.create("short")
	e.create("renewed")
	e.clock.Add(50 * time.Minute)
	patch := `{"series":{"count":2,"lastObservedTime":"2026-11-21T23:50:00.000000Z"}}`
	if r := e.do("PATCH", eventsPath+"/renewed", patch, "Content-Type", "application/merge-patch+json"); r.code != 200 {
		t.Fatalf("renew: %d %s", r.code, r.body)
	}
	e.clock.Add(11 * time.Minute)
	eventually(t, func() bool { return e.do("GET", eventsPath+"/short", nil).code == http.StatusNotFound })
	if r := e.do("GET", eventsPath+"/renewed", nil); r.code != 200 {
		t.Fatalf("renewed event expired with its first write: %d", r.code)
	}
	e.clock.Add(50 * time.Minute)
	eventually(t, func() bool { return e.do("GET", eventsPath+"/renewed", nil).code == http.StatusNotFound })
}

// eventually polls cond; expiry runs on the clock's timers, which fire on their own goroutines.
func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 2s")
}
