package app_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apiserver/app"
	"orch.io/orch/components/certs/certstest"
)

// httpsClient trusts the server's own certificate and presents pair, if given, as its client
// certificate, even when the server names other authorities (a Go client would then send none).
func (s *testServer) httpsClient(t *testing.T, pair *certstest.Pair) *http.Client {
	t.Helper()
	serving, err := os.ReadFile(s.certFile())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(serving)
	cfg := &tls.Config{RootCAs: roots}
	if pair != nil {
		cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}
}

// getStatus sends GET path and answers the status code and the Status message (or body).
func getStatus(t *testing.T, client *http.Client, url, token string) (int, string) {
	t.Helper()
	resp, body := send(t, client, http.MethodGet, url, token, nil)
	var status struct{ Message string }
	if json.Unmarshal(body, &status) == nil && status.Message != "" {
		return resp.StatusCode, status.Message
	}
	return resp.StatusCode, string(body)
}

// With --client-ca-file a certificate signed by the file's authority authenticates its CommonName
// in its Organizations, before the token file; one signed elsewhere is 401, not a failed
// handshake; a request without one falls to the tokens and to anonymous access.
func TestClientCertificates(t *testing.T) {
	dir := t.TempDir()
	ca, other := certstest.NewCA(t, "clients"), certstest.NewCA(t, "elsewhere")
	caFile := filepath.Join(dir, "client-ca.crt")
	certstest.WriteFile(t, caFile, ca.PEM)
	tokens := filepath.Join(dir, "tokens.csv")
	certstest.WriteFile(t, tokens, []byte("bob-token,bob,u-2,devs\n"))
	s := startServer(t, func(o *app.Options) {
		o.ClientCAFile, o.TokenAuthFile = caFile, tokens
		// Nodes may read nodes; everyone else is refused, and the refusal names the user.
		o.AuthorizationMode = "Node,AlwaysDeny"
	})
	nodes := "https://" + s.addr + "/api/v1/nodes"
	alice, nodeA, stranger := ca.Client(t, "alice", "devs"), ca.Client(t, "system:node:node-a", "system:nodes"), other.Client(t, "mallory", "system:nodes")
	tests := []struct {
		name     string
		pair     *certstest.Pair
		token    string
		wantCode int
		want     string
	}{
		{"certificate: its CommonName is the user", &alice, "", 403, `User "alice" cannot list resource "nodes"`},
		{"certificate: its Organization is a group", &nodeA, "", 200, `"kind":"NodeList"`},
		{"certificate before token", &alice, "bob-token", 403, `User "alice" cannot list`},
		{"certificate of another authority", &stranger, "", 401, "Unauthorized"},
		{"no certificate: the token", nil, "bob-token", 403, `User "bob" cannot list`},
		{"no credential: anonymous", nil, "", 403, `User "system:anonymous" cannot list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, msg := getStatus(t, s.httpsClient(t, tt.pair), nodes, tt.token)
			if code != tt.wantCode || !strings.Contains(msg, tt.want) {
				t.Errorf("%d %s; want %d with %q", code, msg, tt.wantCode, tt.want)
			}
		})
	}
}

// --authorization-mode=Node brings NodeRestriction and reads the server's pods: a node creating a
// pod that is not its mirror pod is refused, and deleting a pod that is gone is 404.
func TestNodeModeInTheServer(t *testing.T) {
	testNodeAuthorization(t, func(o *app.Options, _ string) { o.AuthorizationMode = "Node,AlwaysDeny" })
}

// The Node type of --authorization-config is the same authorizer, with NodeRestriction.
func TestNodeAuthorizerInTheConfigFile(t *testing.T) {
	testNodeAuthorization(t, func(o *app.Options, dir string) {
		file := filepath.Join(dir, "authorization.yaml")
		certstest.WriteFile(t, file, []byte("apiVersion: apiserver.config.orch.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n- {type: Node, name: node}\n- {type: AlwaysDeny, name: deny}\n"))
		o.AuthorizationConfig = file
	})
}

func testNodeAuthorization(t *testing.T, authorize func(o *app.Options, dir string)) {
	dir := t.TempDir()
	ca := certstest.NewCA(t, "clients")
	caFile := filepath.Join(dir, "client-ca.crt")
	certstest.WriteFile(t, caFile, ca.PEM)
	s := startServer(t, func(o *app.Options) { o.ClientCAFile = caFile; authorize(o, dir) })
	pair := ca.Client(t, "system:node:node-a", "system:nodes")
	client := s.httpsClient(t, &pair)
	pods := "https://" + s.addr + "/api/v1/namespaces/default/pods"
	resp, body := send(t, client, http.MethodPost, pods, "", strings.NewReader(`{"metadata":{"name":"web"},"spec":{"nodeName":"node-a","containers":[{"name":"c","image":"busybox"}]}}`))
	if want := `pod does not have \"orch.io/config.mirror\" annotation, node \"node-a\" can only create mirror pods`; resp.StatusCode != 403 || !strings.Contains(string(body), want) {
		t.Fatalf("a node creating a pod: %d %s; want 403 with %s", resp.StatusCode, body, want)
	}
	if resp, _ := send(t, client, http.MethodDelete, pods+"/gone", "", nil); resp.StatusCode != 404 {
		t.Fatalf("a node deleting a pod that is gone: %d, want 404", resp.StatusCode)
	}
	if code, msg := getStatus(t, client, "https://"+s.addr+"/api/v1/nodes/node-a", ""); code != 404 {
		t.Fatalf("a node reading its own Node: %d %s, want 404 (allowed, absent)", code, msg)
	}
	if code, _ := getStatus(t, client, "https://"+s.addr+"/api/v1/namespaces/default/secrets", ""); code != 403 {
		t.Fatalf("a node listing secrets: %d, want 403", code)
	}
}

// Without --client-ca-file a client certificate is no credential: the request is anonymous.
func TestClientCertificateWithoutClientCAFile(t *testing.T) {
	ca := certstest.NewCA(t, "clients")
	s := startServer(t, func(o *app.Options) { o.AuthorizationMode = "Node,AlwaysDeny" })
	pair := ca.Client(t, "system:node:node-a", "system:nodes")
	code, msg := getStatus(t, s.httpsClient(t, &pair), "https://"+s.addr+"/api/v1/nodes", "")
	if code != 403 || !strings.Contains(msg, `User "system:anonymous"`) {
		t.Fatalf("%d %s; want 403 for system:anonymous", code, msg)
	}
}

func TestClientCAFileRefused(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.txt")
	certstest.WriteFile(t, notPEM, []byte("not a certificate"))
	for path, want := range map[string]string{
		filepath.Join(dir, "absent.crt"): "--client-ca-file: open " + filepath.Join(dir, "absent.crt"),
		notPEM:                           "--client-ca-file: " + notPEM + ": no PEM certificate in it",
	} {
		o := app.NewOptions()
		o.BindAddress, o.SecurePort, o.DataDir, o.ClientCAFile = "127.0.0.1", 1, t.TempDir(), path
		err := app.Run(context.Background(), o, clock.New(), nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run with --client-ca-file %s: %v; want %q", path, err, want)
		}
	}
}
