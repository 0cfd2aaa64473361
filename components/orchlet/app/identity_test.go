package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"orch.io/orch/components/apis/apiserver/config"
	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/apiserver/storage/memory"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authn/jwt"
	"orch.io/orch/components/authn/jwt/jwttest"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/certs/certstest"
	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/components/orchlet/host"
)

// securedAPIServerWithIssuer starts orch-apiserver's handler as a cluster would run it: client
// certificates of ca, a token file with alice and bob, the JWTs of a test OIDC provider (audience
// orch, username the sub claim prefixed "oidc:"), and the Node mode before a policy that allows
// alice and carol and denies bob. It writes a kubeconfig in which the agent is node-a by its
// client certificate and answers the kubeconfig's path, an administrator's client and the provider.
func securedAPIServerWithIssuer(t *testing.T) (string, kubernetes.Interface, *jwttest.Provider) {
	t.Helper()
	dir := t.TempDir()
	ca := certstest.NewCA(t, "orch-clients")
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	tokens := filepath.Join(dir, "tokens.csv")
	certstest.WriteFile(t, tokens, []byte("alice-token,alice,u-1,devs\nbob-token,bob,u-2,devs\nadmin-token,admin,u-0,admins\n"))
	tf, err := authn.NewTokenFile(tokens)
	if err != nil {
		t.Fatal(err)
	}
	provider := jwttest.NewProvider(t)
	certstest.WriteFile(t, filepath.Join(dir, "oidc-ca.crt"), provider.CAPEM)
	authConfig := filepath.Join(dir, "authentication.yaml")
	certstest.WriteFile(t, authConfig, []byte(fmt.Sprintf(`apiVersion: apiserver.config.orch.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: %s
    audiences: [orch]
    certificateAuthority: %q
  claimMappings:
    username: {claim: sub, prefix: "oidc:"}
`, provider.URL, string(provider.CAPEM))))
	loaded, err := config.LoadAuthentication(authConfig)
	if err != nil {
		t.Fatal(err)
	}
	issuers, err := jwt.NewSet(context.Background(), loaded, clock.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(issuers.Close)
	policy := authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		switch a.User.Name {
		case "alice", "admin", "oidc:carol":
			return authz.DecisionAllow, "", nil
		case "bob":
			return authz.DecisionDeny, "bob may not", nil
		}
		return authz.DecisionNoOpinion, "", nil
	})
	node := &server.NodeAuthorization{}
	kubeconfig, admin := serveToNodeA(t, dir, ca, pool, server.Config{
		Clock:         clock.New(),
		Authenticator: authn.Union(authn.X509(pool), tf, authn.Bearer(issuers)), Authorizer: authz.Union(authz.Node(node.Pod), policy), Node: node,
	}, "admin-token")
	return kubeconfig, admin, provider
}

// serveToNodeA serves orch-apiserver's handler of sc (on memory storage, over TLS asking for client
// certificates of pool) and writes a kubeconfig in dir in which the agent is node-a by a
// certificate of ca; it answers the kubeconfig's path and a client of the administrator, who is
// adminToken.
func serveToNodeA(t *testing.T, dir string, ca *certstest.CA, pool *x509.CertPool, sc server.Config, adminToken string) (string, kubernetes.Interface) {
	t.Helper()
	st := memory.New(sc.Clock)
	stopping := make(chan struct{})
	sc.Storage, sc.Stopping, sc.EventTTL = st, stopping, time.Hour
	sc.MinRequestTimeout, sc.BookmarkInterval = 30*time.Minute, time.Minute
	h, err := server.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert, ClientCAs: pool}
	srv.StartTLS()
	t.Cleanup(func() { close(stopping); srv.Close(); _ = st.Close() })

	certstest.WriteFile(t, filepath.Join(dir, "ca.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}))
	ca.Client(t, "system:node:node-a", "system:nodes").WriteFiles(t, dir, "node-a")
	kubeconfig := filepath.Join(dir, "orchlet.conf")
	certstest.WriteFile(t, kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: orch, cluster: {server: %q, certificate-authority: ca.crt}}]
users: [{name: node-a, user: {client-certificate: node-a.crt, client-key: node-a.key}}]
contexts: [{name: orch, context: {cluster: orch, user: node-a}}]
current-context: orch
`, srv.URL)))
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLSClientConfig.CertFile, cfg.TLSClientConfig.KeyFile, cfg.BearerToken = "", "", adminToken
	admin, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return kubeconfig, admin
}

// agentGet asks the agent's HTTPS server for path with token (none if empty).
func agentGet(url, token string) (int, string, error) {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// In API-server mode the agent checks the callers of its HTTPS server with the API server: a
// token orch-apiserver accepts is accepted, one it does not know is 401, and a user its
// authorizers deny is 403. The agent itself is node-a by its client certificate, under the Node
// mode: it registers, and it may ask for the reviews.
func TestWebhooksThroughTheAPIServer(t *testing.T) {
	kubeconfig, admin, provider := securedAPIServerWithIssuer(t)
	port := apptest.FreePort(t)
	o := parse(t, apptest.WithRuntime(t, "--orchconfig="+kubeconfig, "--hostname-override=node-a", "--kube-api-content-type=application/json",
		"--enable-server=true", "--address=127.0.0.1", "--port="+port, "--cert-dir="+t.TempDir(),
		"--anonymous-auth=false", "--authentication-token-webhook", "--authorization-mode=Webhook")...)
	cancel, done := runAsync(o, host.NewFake(), clock.New())
	defer func() {
		cancel()
		if err := wait(t, done); err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, "node-a registered under the Node mode", func() (bool, error) {
		_, err := admin.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
		return err == nil, err
	})
	url := "https://127.0.0.1:" + port + "/pods"
	waitFor(t, "alice admitted by the agent", func() (bool, error) {
		code, body, err := agentGet(url, "alice-token")
		return code == http.StatusOK && strings.Contains(body, `"kind":"PodList"`), fmt.Errorf("%d %s %v", code, body, err)
	})
	carol := provider.Token(t, map[string]any{"iss": provider.URL, "aud": "orch", "sub": "carol", "exp": time.Now().Add(time.Hour).Unix()})
	waitFor(t, "the API server's issuer ready", func() (bool, error) {
		code, body, err := agentGet(url, carol)
		return code == http.StatusOK, fmt.Errorf("%d %s %v", code, body, err)
	})
	tests := []struct {
		token    string
		wantCode int
		want     string
	}{
		{"wrong-token", http.StatusUnauthorized, "Unauthorized"},
		{"", http.StatusUnauthorized, "Unauthorized"},
		{"bob-token", http.StatusForbidden, "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[pods proxy])"},
		// A JWT of the API server's issuer is accepted by the agent too, through TokenReview.
		{carol, http.StatusOK, `"kind":"PodList"`},
		{provider.Token(t, map[string]any{"iss": provider.URL, "aud": "elsewhere", "sub": "carol", "exp": time.Now().Add(time.Hour).Unix()}), http.StatusUnauthorized, "Unauthorized"},
	}
	for _, tt := range tests {
		code, body, err := agentGet(url, tt.token)
		if err != nil || code != tt.wantCode || !strings.Contains(body, tt.want) {
			t.Errorf("token %q: %d %q %v; want %d %q", tt.token, code, body, err, tt.wantCode, tt.want)
		}
	}
}

// Without --orchconfig there is no API server to ask: the webhooks are refused, naming it.
func TestWebhooksRefusedInStandaloneMode(t *testing.T) {
	for _, flag := range []string{"--authentication-token-webhook", "--authorization-mode=Webhook"} {
		o := parse(t, apptest.WithRuntime(t, "--enable-server=true", "--address=127.0.0.1", "--port="+apptest.FreePort(t), "--cert-dir="+t.TempDir(), flag)...)
		err := Run(context.Background(), o, host.NewFake(), clock.New())
		if err == nil || !strings.Contains(err.Error(), strings.Split(flag, "=")[0]) || !strings.Contains(err.Error(), "--orchconfig") {
			t.Errorf("%s in standalone mode: %v; want a refusal naming it and --orchconfig", flag, err)
		}
	}
}
