package app_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"

	"orch.io/orch/components/apiserver/app"
	"orch.io/orch/components/authz/authztest"
)

// TestAuthorizationConfigWebhook runs orch-apiserver with an AuthorizationConfiguration whose
// webhook is a real HTTPS server: its answers decide requests, its reasons reach the 403, its
// answers are cached, and its failure with nothing after it is a 500.
func TestAuthorizationConfigWebhook(t *testing.T) {
	policy := authztest.NewServer(t, authztest.Decide(func(r authztest.Review) authorizationv1.SubjectAccessReviewStatus {
		switch {
		case r.Spec.NonResourceAttributes != nil:
			return authorizationv1.SubjectAccessReviewStatus{Allowed: true}
		case r.Spec.User == "alice":
			return authorizationv1.SubjectAccessReviewStatus{Allowed: true}
		case r.Spec.User == "mallory":
			return authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "mallory is banned"}
		}
		return authorizationv1.SubjectAccessReviewStatus{}
	}))
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	var rows []string
	for _, u := range []string{"alice", "mallory", "bob", "carol", "dave"} {
		rows = append(rows, fmt.Sprintf("%s-token,%s,uid-%s,\"devs\"", u, u, u))
	}
	writeFile(t, tokens, strings.Join(rows, "\n")+"\n")
	authzFile := filepath.Join(dir, "authz.yaml")
	writeFile(t, authzFile, fmt.Sprintf(`apiVersion: apiserver.config.orch.io/v1
kind: AuthorizationConfiguration
authorizers:
- type: Webhook
  name: policy
  webhook:
    timeout: 5s
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    failurePolicy: NoOpinion
    connectionInfo:
      type: KubeConfigFile
      kubeConfigFile: %s
    matchConditions:
    - expression: "request.user != 'dave'"
`, policy.Kubeconfig))
	s := startServer(t, func(o *app.Options) {
		o.TokenAuthFile = tokens
		o.AuthorizationConfig = authzFile
	})
	get := func(user, path string) (int, string) {
		t.Helper()
		cfg := s.restConfig()
		cfg.BearerToken = user + "-token"
		client, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		resp, body := send(t, client, http.MethodGet, "https://"+s.addr+path, "", nil)
		return resp.StatusCode, string(body)
	}
	const events = "/apis/events.orch.io/v1/namespaces/default/events"
	forbidden := `events.events.orch.io is forbidden: User \"%s\" cannot list resource \"events\" in API group \"events.orch.io\" in the namespace \"default\"`
	tests := []struct {
		user     string
		wantCode int
		wantBody string
	}{
		{"alice", http.StatusOK, `"kind":"EventList"`},
		{"mallory", http.StatusForbidden, fmt.Sprintf(forbidden, "mallory") + `: mallory is banned"`},
		{"bob", http.StatusForbidden, fmt.Sprintf(forbidden, "bob") + `"`},
		{"dave", http.StatusForbidden, fmt.Sprintf(forbidden, "dave") + `"`}, // excluded by the match condition: none left
	}
	for _, tt := range tests {
		code, body := get(tt.user, events)
		if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
			t.Errorf("%s: %d %s\nwant %d with %s", tt.user, code, body, tt.wantCode, tt.wantBody)
		}
	}
	for _, r := range policy.Reviews() {
		if r.Spec.User == "dave" {
			t.Error("the webhook was asked about dave, whom its match condition excludes")
		}
	}
	code, metrics := get("alice", "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`apiserver_authorization_decisions_total{decision="allowed",name="policy",type="Webhook"}`,
		`apiserver_authorization_decisions_total{decision="denied",name="policy",type="Webhook"} 1`,
		`apiserver_authorization_webhook_evaluations_total{name="policy",result="success"}`,
		`apiserver_authorization_match_condition_exclusions_total{name="policy",type="Webhook"} 1`,
		`apiserver_authorization_config_controller_automatic_reloads_total{apiserver_id_hash="sha256:`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// The webhook goes down: cached answers still hold; a new question fails open to nothing,
	// which Kubernetes answers 500.
	policy.Close()
	if code, body := get("alice", events); code != http.StatusOK {
		t.Errorf("alice, cached: %d %s", code, body)
	}
	if code, body := get("mallory", events); code != http.StatusForbidden || !strings.Contains(body, "mallory is banned") {
		t.Errorf("mallory, cached: %d %s", code, body)
	}
	code, body := get("carol", events)
	if code != http.StatusInternalServerError || !strings.HasPrefix(body, `Internal Server Error: "`+events+`": authorization webhook "policy": Post`) {
		t.Errorf("carol with the webhook down: %d %s", code, body)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// The API server refuses to call its own SubjectAccessReview API: InClusterConfig stops it at start.
func TestAuthorizationConfigInClusterRefused(t *testing.T) {
	file, err := filepath.Abs("../../apis/apiserver/config/testdata/authorization/invalid/connection-in-cluster-refused.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := app.NewOptions()
	o.DataDir = t.TempDir()
	o.AuthorizationConfig = file
	err = app.Run(context.Background(), o, clock.New(), nil)
	if err == nil || !strings.Contains(err.Error(), "InClusterConfig is not allowed for the API server itself; use KubeConfigFile") ||
		!strings.Contains(err.Error(), "--authorization-config") {
		t.Fatalf("Run = %v, want the InClusterConfig refusal naming the flag", err)
	}
}

// A webhook whose kubeconfig cannot be read stops the server at start, naming the authorizer.
func TestAuthorizationConfigBadKubeconfigRefused(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "webhook.kubeconfig")
	writeFile(t, kubeconfig, "clusters: [[[")
	file := filepath.Join(dir, "authz.yaml")
	writeFile(t, file, `apiVersion: apiserver.config.orch.io/v1
kind: AuthorizationConfiguration
authorizers:
- type: Webhook
  name: policy
  webhook:
    timeout: 5s
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    failurePolicy: Deny
    connectionInfo: {type: KubeConfigFile, kubeConfigFile: webhook.kubeconfig}
    matchConditions: []
`)
	o := app.NewOptions()
	o.DataDir = t.TempDir()
	o.AuthorizationConfig = file
	err := app.Run(context.Background(), o, clock.New(), nil)
	if err == nil || !strings.Contains(err.Error(), `authorizers[0] (Webhook "policy")`) || !strings.Contains(err.Error(), kubeconfig) {
		t.Fatalf("Run = %v, want an error naming the authorizer and its kubeconfig", err)
	}
}
