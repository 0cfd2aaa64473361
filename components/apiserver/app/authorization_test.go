package app

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"

	"orch.io/orch/components/apis/apiserver/config"
	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/authz/authztest"
	"orch.io/orch/components/authz/rbac"
)

// byUser allows alice, denies mallory and has no opinion on anyone else.
var byUser = authztest.Decide(func(r authztest.Review) authorizationv1.SubjectAccessReviewStatus {
	switch r.Spec.User {
	case "alice":
		return authorizationv1.SubjectAccessReviewStatus{Allowed: true}
	case "mallory":
		return authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "mallory is banned"}
	}
	return authorizationv1.SubjectAccessReviewStatus{}
})

// webhookEntry is one Webhook authorizer of an AuthorizationConfiguration reaching s.
func webhookEntry(name string, s *authztest.Server, failurePolicy string, extra string, conditions ...string) string {
	entry := fmt.Sprintf(`- type: Webhook
  name: %s
  webhook:
    timeout: 5s
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    failurePolicy: %s
    connectionInfo:
      type: KubeConfigFile
      kubeConfigFile: %s
`, name, failurePolicy, s.Kubeconfig)
	entry += extra
	entry += "    matchConditions:"
	if len(conditions) == 0 {
		return entry + " []\n"
	}
	entry += "\n"
	for _, c := range conditions {
		entry += fmt.Sprintf("    - expression: %q\n", c)
	}
	return entry
}

const authorizationHeader = "apiVersion: apiserver.config.orch.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n"

func writeAuthorizationConfig(t *testing.T, path string, entries ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(authorizationHeader+strings.Join(entries, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

func loadChain(t *testing.T, clk clock.Clock, entries ...string) (authz.Authorizer, *prometheus.Registry) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "authz.yaml")
	writeAuthorizationConfig(t, path, entries...)
	a, err := config.LoadAuthorization(path)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	chain, err := authorizerChain(a, clk, authz.NewMetrics(reg), &server.NodeAuthorization{}, rbac.NewIndex())
	if err != nil {
		t.Fatal(err)
	}
	return chain, reg
}

func listEvents(user, namespace string) authz.Attributes {
	return authz.Attributes{
		User: &authn.UserInfo{Name: user, Groups: []string{"system:authenticated"}},
		Verb: "list", Namespace: namespace, APIGroup: "events.orch.io", APIVersion: "v1", Resource: "events",
		ResourceRequest: true,
	}
}

var healthz = authz.Attributes{User: &authn.UserInfo{Name: "alice"}, Verb: "get", Path: "/healthz"}

// The file's authorizers are asked in order: Allow and Deny stop, NoOpinion passes on, and match
// conditions written in CEL decide whether the webhook is asked, with Kubernetes' three steps.
func TestAuthorizerChainFromFile(t *testing.T) {
	s := authztest.NewServer(t, byUser)
	tests := []struct {
		name      string
		entries   func() []string
		attrs     authz.Attributes
		want      authz.Decision
		wantErr   string
		wantCalls int
	}{
		{"webhook allows", func() []string { return []string{webhookEntry("policy", s, "Deny", "")} },
			listEvents("alice", "default"), authz.DecisionAllow, "", 1},
		{"webhook denies before AlwaysAllow", func() []string {
			return []string{webhookEntry("policy", s, "Deny", ""), "- type: AlwaysAllow\n  name: rest\n"}
		}, listEvents("mallory", "default"), authz.DecisionDeny, "", 1},
		{"no opinion passes on to AlwaysAllow", func() []string {
			return []string{webhookEntry("policy", s, "Deny", ""), "- type: AlwaysAllow\n  name: rest\n"}
		}, listEvents("bob", "default"), authz.DecisionAllow, "", 1},
		{"no opinion and none left", func() []string { return []string{webhookEntry("policy", s, "Deny", "")} },
			listEvents("bob", "default"), authz.DecisionNoOpinion, "", 1},
		{"AlwaysDeny first stops the chain", func() []string {
			return []string{"- type: AlwaysDeny\n  name: closed\n", webhookEntry("policy", s, "Deny", "")}
		}, listEvents("alice", "default"), authz.DecisionDeny, "", 0},
		{"match conditions all true: called", func() []string {
			return []string{webhookEntry("policy", s, "Deny", "", "has(request.resourceAttributes)", "request.resourceAttributes.namespace != 'kube-system'")}
		}, listEvents("alice", "default"), authz.DecisionAllow, "", 1},
		{"a match condition false: skipped, AlwaysDeny after", func() []string {
			return []string{webhookEntry("policy", s, "Deny", "", "request.resourceAttributes.namespace != 'kube-system'"), "- type: AlwaysDeny\n  name: closed\n"}
		}, listEvents("alice", "kube-system"), authz.DecisionDeny, "", 0},
		{"a match condition erroring, policy NoOpinion: skipped, passes on", func() []string {
			return []string{webhookEntry("policy", s, "NoOpinion", "", "request.resourceAttributes.namespace != 'kube-system'"), "- type: AlwaysAllow\n  name: rest\n"}
		}, healthz, authz.DecisionAllow, "", 0},
		{"a match condition erroring, policy NoOpinion, none left", func() []string {
			return []string{webhookEntry("policy", s, "NoOpinion", "", "request.resourceAttributes.namespace != 'kube-system'")}
		}, healthz, authz.DecisionNoOpinion, "no such key: resourceAttributes", 0},
		{"a match condition erroring, policy Deny: denied", func() []string {
			return []string{webhookEntry("policy", s, "Deny", "", "request.resourceAttributes.namespace != 'kube-system'"), "- type: AlwaysAllow\n  name: rest\n"}
		}, healthz, authz.DecisionDeny, "no such key: resourceAttributes", 0},
		{"two webhooks, the second decides", func() []string {
			return []string{webhookEntry("first", s, "Deny", "", "request.user == 'nobody'"), webhookEntry("second", s, "Deny", "")}
		}, listEvents("mallory", "default"), authz.DecisionDeny, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chain, _ := loadChain(t, clock.NewMock(), tt.entries()...)
			before := s.Calls()
			d, _, err := chain.Authorize(context.Background(), tt.attrs)
			if d != tt.want {
				t.Errorf("decision %v, want %v (error %v)", d, tt.want, err)
			}
			if (err != nil) != (tt.wantErr != "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
			if calls := s.Calls() - before; calls != tt.wantCalls {
				t.Errorf("webhook called %d times, want %d", calls, tt.wantCalls)
			}
		})
	}
}

// The cache fields of the file reach the webhook: TTLs on the injected clock, and the switches
// that turn caching off.
func TestAuthorizationFileCaching(t *testing.T) {
	tests := []struct {
		name  string
		extra string
		user  string
		ttl   time.Duration // 0: not cached
	}{
		{"default authorized TTL 5m", "", "alice", 5 * time.Minute},
		{"default unauthorized TTL 30s", "", "mallory", 30 * time.Second},
		{"authorizedTTL", "    authorizedTTL: 2m\n", "alice", 2 * time.Minute},
		{"unauthorizedTTL", "    unauthorizedTTL: 10s\n", "bob", 10 * time.Second},
		{"cacheAuthorizedRequests false", "    cacheAuthorizedRequests: false\n", "alice", 0},
		{"cacheUnauthorizedRequests false", "    cacheUnauthorizedRequests: false\n", "mallory", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := authztest.NewServer(t, byUser)
			clk := clock.NewMock()
			chain, _ := loadChain(t, clk, webhookEntry("policy", s, "NoOpinion", tt.extra))
			ask := func(wantCalls int, step string) {
				t.Helper()
				if _, _, err := chain.Authorize(context.Background(), listEvents(tt.user, "default")); err != nil {
					t.Fatal(err)
				}
				if s.Calls() != wantCalls {
					t.Fatalf("%s: webhook called %d times, want %d", step, s.Calls(), wantCalls)
				}
			}
			ask(1, "first")
			if tt.ttl == 0 {
				ask(2, "caching off")
				return
			}
			clk.Add(tt.ttl - time.Nanosecond)
			ask(1, "just before the TTL")
			clk.Add(time.Nanosecond)
			ask(2, "at the TTL")
		})
	}
}

// reloadFixture is a reloader of a file in a test directory, on a mock clock.
type reloadFixture struct {
	path string
	clk  *clock.Mock
	reg  *prometheus.Registry
	r    *authorizationReloader
}

func newReloadFixture(t *testing.T, entries ...string) *reloadFixture {
	t.Helper()
	f := &reloadFixture{path: filepath.Join(t.TempDir(), "authz.yaml"), clk: clock.NewMock(), reg: prometheus.NewRegistry()}
	writeAuthorizationConfig(t, f.path, entries...)
	a, err := config.LoadAuthorization(f.path)
	if err != nil {
		t.Fatal(err)
	}
	if f.r, err = newAuthorizationReloader(a, f.clk, f.reg, "apiserver-test", rbac.NewIndex()); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *reloadFixture) reloads(t *testing.T, status string) float64 {
	t.Helper()
	return authztest.Metric(t, f.reg, "apiserver_authorization_config_controller_automatic_reloads_total",
		map[string]string{"status": status, "apiserver_id_hash": fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("apiserver-test")))})
}

func (f *reloadFixture) decide(t *testing.T, user string) authz.Decision {
	t.Helper()
	d, _, _ := f.r.Authorize(context.Background(), listEvents(user, "default"))
	return d
}

// A changed file is picked up on the clock's poll; a valid one replaces the chain, an invalid or
// unbuildable one is counted as a failure and the chain kept.
func TestAuthorizationReload(t *testing.T) {
	s := authztest.NewServer(t, byUser)
	f := newReloadFixture(t, webhookEntry("policy", s, "NoOpinion", ""))
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { f.r.run(ctx); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })

	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 10s", what)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	eventually("the initial load counted", func() bool { return f.reloads(t, "success") == 1 })
	if d := f.decide(t, "bob"); d != authz.DecisionNoOpinion {
		t.Fatalf("before reload: bob %v, want NoOpinion", d)
	}

	// A valid new file: picked up on the next poll, not before.
	writeAuthorizationConfig(t, f.path, webhookEntry("policy", s, "NoOpinion", ""), "- type: AlwaysDeny\n  name: closed\n")
	f.clk.Add(authorizationReloadInterval - time.Second)
	time.Sleep(50 * time.Millisecond)
	if d := f.decide(t, "bob"); d != authz.DecisionNoOpinion {
		t.Fatalf("reloaded before the poll: bob %v", d)
	}
	f.clk.Add(time.Second)
	eventually("the new chain", func() bool { return f.decide(t, "bob") == authz.DecisionDeny })
	eventually("the reload counted", func() bool { return f.reloads(t, "success") == 2 })
	if d := f.decide(t, "alice"); d != authz.DecisionAllow {
		t.Errorf("after reload: alice %v, want Allow", d)
	}

	// Invalid files: kept the chain, counted as failures, once per content.
	for i, bad := range []string{
		"apiVersion: apiserver.config.orch.io/v1\nkind: AuthorizationConfiguration\nauthorizers: []\n",
		authorizationHeader + "- type: ABAC\n  name: abac\n",
	} {
		if err := os.WriteFile(f.path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		f.clk.Add(authorizationReloadInterval)
		want := float64(i + 1)
		eventually("the failure counted", func() bool { return f.reloads(t, "failure") == want })
		if d := f.decide(t, "bob"); d != authz.DecisionDeny {
			t.Errorf("invalid file %d replaced the chain: bob %v", i, d)
		}
	}
	f.clk.Add(authorizationReloadInterval)
	time.Sleep(50 * time.Millisecond)
	if n := f.reloads(t, "failure"); n != 2 {
		t.Errorf("an unchanged invalid file counted again: %v failures", n)
	}
}

func TestAuthorizationReloadCheck(t *testing.T) {
	s := authztest.NewServer(t, byUser)
	valid := webhookEntry("policy", s, "NoOpinion", "")
	tests := []struct {
		name        string
		change      func(t *testing.T, path string)
		wantBob     authz.Decision
		wantSuccess float64
		wantFailure float64
	}{
		{"unchanged file", func(*testing.T, string) {}, authz.DecisionNoOpinion, 0, 0},
		{"same meaning, other text", func(t *testing.T, path string) {
			writeAuthorizationConfig(t, path, "# a comment\n"+valid)
		}, authz.DecisionNoOpinion, 0, 0},
		{"new authorizer", func(t *testing.T, path string) {
			writeAuthorizationConfig(t, path, valid, "- type: AlwaysAllow\n  name: open\n")
		}, authz.DecisionAllow, 1, 0},
		{"file removed", func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, authz.DecisionNoOpinion, 0, 1},
		{"kubeconfig unreadable", func(t *testing.T, path string) {
			bad := filepath.Join(t.TempDir(), "bad.kubeconfig")
			if err := os.WriteFile(bad, []byte("clusters: [[["), 0o600); err != nil {
				t.Fatal(err)
			}
			writeAuthorizationConfig(t, path, strings.Replace(valid, s.Kubeconfig, bad, 1), "- type: AlwaysAllow\n  name: open\n")
		}, authz.DecisionNoOpinion, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newReloadFixture(t, valid)
			f.r.Check(context.Background()) // the first look records the content, as the file already loaded
			tt.change(t, f.path)
			f.r.Check(context.Background())
			if d := f.decide(t, "bob"); d != tt.wantBob {
				t.Errorf("bob: %v, want %v", d, tt.wantBob)
			}
			if n := f.reloads(t, "success"); n != tt.wantSuccess {
				t.Errorf("successful reloads %v, want %v", n, tt.wantSuccess)
			}
			if n := f.reloads(t, "failure"); n != tt.wantFailure {
				t.Errorf("failed reloads %v, want %v", n, tt.wantFailure)
			}
		})
	}
}

// An emptied file is a failed reload, counted once, even when it is the first content read after
// the start: the file loaded at start was not empty.
func TestAuthorizationReloadEmptiedFile(t *testing.T) {
	f := newReloadFixture(t, "- type: AlwaysAllow\n  name: open\n")
	if err := os.WriteFile(f.path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.r.Check(context.Background())
	f.r.Check(context.Background())
	if n := f.reloads(t, "failure"); n != 1 {
		t.Errorf("failed reloads %v, want 1", n)
	}
	if d := f.decide(t, "bob"); d != authz.DecisionAllow {
		t.Errorf("bob: %v after the file was emptied, want the chain kept (Allow)", d)
	}
}

func TestAPIServerID(t *testing.T) {
	id := apiserverID()
	if !strings.HasPrefix(id, "apiserver-") || len(id) != len("apiserver-")+26 || id != strings.ToLower(id) {
		t.Errorf("apiserverID() = %q, want apiserver- and 26 lower-case base32 characters", id)
	}
	if apiserverID() != id {
		t.Error("apiserverID is not stable")
	}
}
