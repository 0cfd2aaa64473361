package app_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/app"
	"orch.io/orch/components/authn/jwt/jwttest"
	"orch.io/orch/components/syncbuf"
)

// jwtAuthConfig writes an AuthenticationConfiguration trusting p for audience "orch", with a claim
// rule and a user rule whose messages the tests look for in the log.
func jwtAuthConfig(t *testing.T, p *jwttest.Provider) string {
	t.Helper()
	cfg := map[string]any{
		"apiVersion": "apiserver.config.orch.io/v1",
		"kind":       "AuthenticationConfiguration",
		"jwt": []map[string]any{{
			"issuer": map[string]any{
				"url":                  p.URL,
				"certificateAuthority": string(p.CAPEM),
				"audiences":            []string{"orch"},
			},
			"claimValidationRules": []map[string]any{
				{"expression": "claims.tenant == 'blue'", "message": "tenant must be blue"},
			},
			"claimMappings": map[string]any{
				"username": map[string]any{"claim": "sub", "prefix": "oidc:"},
				"groups":   map[string]any{"claim": "groups", "prefix": "oidc:"},
			},
			"userValidationRules": []map[string]any{
				{"expression": "!user.username.startsWith('oidc:system:')", "message": "system names are reserved"},
			},
		}},
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "authentication.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// captureLog sends klog's output to a buffer until the test ends.
func captureLog(t *testing.T) *klogBuffer {
	t.Helper()
	buf := &klogBuffer{}
	klog.LogToStderr(false)
	klog.SetOutput(buf)
	t.Cleanup(func() {
		klog.SetOutput(os.Stderr)
		klog.LogToStderr(true)
	})
	return buf
}

// klogBuffer is klog's output, flushed before it is read.
type klogBuffer struct{ syncbuf.Buffer }

func (b *klogBuffer) String() string {
	klog.Flush()
	return b.Buffer.String()
}

// JWTs through orch-apiserver's handler: a token of the configured issuer authenticates as the
// mapped user; every token the authenticator refuses is a 401 Status saying only "Unauthorized",
// with the reason in the server's log; the token file is asked first.
func TestJWTAuthentication(t *testing.T) {
	p := jwttest.NewProvider(t)
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("static-token,bob,u-2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	log := captureLog(t)
	s := startServer(t, func(o *app.Options) {
		o.AuthenticationConfig = jwtAuthConfig(t, p)
		o.TokenAuthFile = tokens
		// Every request is denied, so the 403 names the user the server authenticated.
		o.AuthorizationMode = "AlwaysDeny"
	})
	client, err := rest.HTTPClientFor(s.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	get := func(token string) (int, metav1.Status) {
		t.Helper()
		resp, body := send(t, client, http.MethodGet, "https://"+s.addr+"/apis/events.orch.io/v1/namespaces/default/events", token, nil)
		var status metav1.Status
		if err := json.Unmarshal(body, &status); err != nil {
			t.Fatalf("%d %s: not a Status: %v", resp.StatusCode, body, err)
		}
		return resp.StatusCode, status
	}
	now := time.Now()
	claims := func(changes map[string]any) map[string]any {
		c := map[string]any{
			"iss": p.URL, "aud": "orch", "sub": "alice", "groups": []string{"devs"}, "tenant": "blue",
			"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		}
		for k, v := range changes {
			c[k] = v
		}
		return c
	}

	// Discovery runs in the background: the issuer's tokens are accepted once it has succeeded.
	good := p.Token(t, claims(nil))
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, status := get(good)
		if code == http.StatusForbidden {
			if want := `User "oidc:alice" cannot list resource "events"`; !strings.Contains(status.Message, want) {
				t.Fatalf("403 message %q lacks %q", status.Message, want)
			}
			break
		}
		if code != http.StatusUnauthorized || time.Now().After(deadline) {
			t.Fatalf("valid JWT: %d %+v", code, status)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, status := get("static-token"); code != http.StatusForbidden || !strings.Contains(status.Message, `User "bob"`) {
		t.Fatalf("token file: %d %+v", code, status)
	}

	other := p.NewKey(t, jose.ES256)
	for _, tc := range []struct {
		name, token, reason string
	}{
		{"wrong issuer", p.Token(t, claims(map[string]any{"iss": "https://evil.example.com"})), "invalid bearer token"},
		{"expired", p.Token(t, claims(map[string]any{"exp": now.Add(-time.Minute).Unix()})), "token is expired"},
		{"wrong audience", p.Token(t, claims(map[string]any{"aud": "other"})), "expected audience"},
		{"unknown key", jwttest.Sign(t, other, claims(nil)), "failed to verify id token signature"},
		{"claim rule false", p.Token(t, claims(map[string]any{"tenant": "red"})), "tenant must be blue"},
		{"user rule false", p.Token(t, claims(map[string]any{"sub": "system:admin"})), "system names are reserved"},
		{"not a token at all", "garbage", "invalid bearer token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(log.String())
			code, status := get(tc.token)
			if code != http.StatusUnauthorized || status.Reason != metav1.StatusReasonUnauthorized || status.Message != "Unauthorized" {
				t.Fatalf("%d %+v, want 401 Unauthorized", code, status)
			}
			if logged := log.String()[before:]; !strings.Contains(logged, tc.reason) {
				t.Errorf("log of the request lacks the reason %q:\n%s", tc.reason, logged)
			}
		})
	}
	// Without a token the request is anonymous, as --anonymous-auth says.
	if code, status := get(""); code != http.StatusForbidden || !strings.Contains(status.Message, `User "system:anonymous"`) {
		t.Fatalf("anonymous: %d %+v", code, status)
	}
}

// /metrics serves the authentication reload's metrics beside the process's.
func TestAuthenticationReloadMetricsServed(t *testing.T) {
	p := jwttest.NewProvider(t)
	s := startServer(t, func(o *app.Options) { o.AuthenticationConfig = jwtAuthConfig(t, p) })
	client, err := rest.HTTPClientFor(s.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	_, body := send(t, client, http.MethodGet, "https://"+s.addr+"/metrics", "", nil)
	for _, want := range []string{
		`apiserver_authentication_config_controller_last_config_info{apiserver_id_hash="sha256:`,
		"go_goroutines ",
		"process_cpu_seconds_total ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// One server's reload metrics, of the authentication and the authorization file alike, carry one
// identity: Kubernetes' apiserver_id_hash names the server, not the file.
func TestReloadMetricsNameOneServer(t *testing.T) {
	p := jwttest.NewProvider(t)
	authzFile := filepath.Join(t.TempDir(), "authz.yaml")
	if err := os.WriteFile(authzFile, []byte("apiVersion: apiserver.config.orch.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- type: AlwaysAllow\n  name: open\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(o *app.Options) {
		o.AuthenticationConfig = jwtAuthConfig(t, p)
		o.AuthorizationConfig = authzFile
	})
	client, err := rest.HTTPClientFor(s.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	idHash := regexp.MustCompile(`(?m)^(apiserver_authentication_config_controller_last_config_info|apiserver_authorization_config_controller_automatic_reloads_total)\{.*apiserver_id_hash="([^"]*)"`)
	var ids map[string]string
	for deadline := time.Now().Add(10 * time.Second); len(ids) < 2; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("/metrics names the server as %v, want both reload metrics", ids)
		}
		_, body := send(t, client, http.MethodGet, "https://"+s.addr+"/metrics", "", nil)
		ids = map[string]string{}
		for _, m := range idHash.FindAllStringSubmatch(string(body), -1) {
			ids[m[1]] = m[2]
		}
	}
	if ids["apiserver_authentication_config_controller_last_config_info"] != ids["apiserver_authorization_config_controller_automatic_reloads_total"] {
		t.Errorf("the reload metrics name two servers: %v", ids)
	}
}

// client-go with an OIDC token works against the Event API; without one, or with an expired one,
// it gets Unauthorized.
func TestClientGoWithOIDCToken(t *testing.T) {
	p := jwttest.NewProvider(t)
	s := startServer(t, func(o *app.Options) {
		o.AuthenticationConfig = jwtAuthConfig(t, p)
		o.AnonymousAuth = false
	})
	now := time.Now()
	token := func(exp time.Time) string {
		return p.Token(t, map[string]any{"iss": p.URL, "aud": []string{"orch"}, "sub": "alice", "tenant": "blue", "exp": exp.Unix()})
	}
	client := func(bearer string) dynamic.NamespaceableResourceInterface {
		cfg := s.restConfig()
		cfg.BearerToken = bearer
		c, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c.Resource(eventsGVR)
	}
	ctx := testContext(t)
	events := client(token(now.Add(time.Hour))).Namespace("default")
	// The authenticator reaches its issuer in the background.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := events.Create(ctx, newEvent("default", "oidc", nil), metav1.CreateOptions{})
		if err == nil {
			break
		}
		if !apierrors.IsUnauthorized(err) || time.Now().After(deadline) {
			t.Fatalf("create with an OIDC token: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	list, err := events.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].GetName() != "oidc" {
		t.Fatalf("list with an OIDC token: %v, %v", list, err)
	}
	for name, bearer := range map[string]string{"no token": "", "expired token": token(now.Add(-time.Minute))} {
		if _, err := client(bearer).Namespace("default").List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
			t.Errorf("%s: %v, want Unauthorized", name, err)
		}
	}
}
