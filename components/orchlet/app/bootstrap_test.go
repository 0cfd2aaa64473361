package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/apiserver/storage/memory"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/certs/certstest"
	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/components/orchlet/certificate"
	"orch.io/orch/components/orchlet/host"
)

// csrCluster is orch-apiserver in-process with a signing CA, on clk: a bootstrap token user in
// system:bootstrappers may request node client certificates (as Kubernetes' RBAC bindings of
// kubeadm allow), nodes are authorized by mode Node, and client certificates are verified
// against the CA on clk. seen records the serial numbers of the client certificates it accepted.
type csrCluster struct {
	url, bootKubeconfig string
	ca                  *certstest.CA
	admin               *rest.Config
	seen                sync.Map
}

// signingDuration is short, so the mock clock runs few ticks of the agent's tickers to reach a renewal.
const signingDuration = 10 * time.Minute

func newCSRCluster(t *testing.T, clk clock.Clock) *csrCluster {
	t.Helper()
	c := &csrCluster{ca: certstest.NewCA(t, "orch-ca")}
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.csv")
	certstest.WriteFile(t, tokens, []byte("boot-token,system:bootstrap:abcdef,,system:bootstrappers\nadmin-token,admin,,system:masters\n"))
	tf, err := authn.NewTokenFile(tokens)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(c.ca.Cert)
	clientCerts := authn.AuthenticatorFunc(func(r *http.Request) (*authn.UserInfo, bool, error) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			return nil, false, nil
		}
		leaf := r.TLS.PeerCertificates[0]
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: clk.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			return nil, false, err
		}
		c.seen.Store(leaf.SerialNumber.String(), leaf.Subject.CommonName)
		return &authn.UserInfo{Name: leaf.Subject.CommonName, Groups: append(leaf.Subject.Organization, "system:authenticated")}, true, nil
	})
	cluster := authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		if a.User == nil {
			return authz.DecisionNoOpinion, "", nil
		}
		for _, g := range a.User.Groups {
			if g == "system:masters" || g == "system:bootstrappers" && a.Resource == "certificatesigningrequests" && a.Subresource != "selfnodeclient" {
				return authz.DecisionAllow, "", nil
			}
		}
		return authz.DecisionNoOpinion, "", nil
	})
	node := &server.NodeAuthorization{}
	st := memory.New(clk)
	stopping := make(chan struct{})
	h, err := server.New(server.Config{
		Clock: clk, Storage: st, EventTTL: time.Hour, Authenticator: authn.Union(tf, clientCerts),
		Authorizer: authz.Union(authz.Node(node.Pod), cluster), Node: node,
		MinRequestTimeout: 30 * time.Minute, BookmarkInterval: time.Minute, Stopping: stopping,
		Signing: &server.Signing{Cert: c.ca.Cert, Key: c.ca.Key(), Duration: signingDuration},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = &tls.Config{ClientAuth: tls.RequestClientCert}
	srv.StartTLS()
	t.Cleanup(func() { close(stopping); srv.Close(); _ = st.Close() })
	c.url = srv.URL
	serverCA := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	certstest.WriteFile(t, filepath.Join(dir, "ca.crt"), serverCA)
	c.bootKubeconfig = filepath.Join(dir, "bootstrap.conf")
	certstest.WriteFile(t, c.bootKubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: orch, cluster: {server: %q, certificate-authority: ca.crt}}]
users: [{name: bootstrap, user: {token: boot-token}}]
contexts: [{name: orch, context: {cluster: orch, user: bootstrap}}]
current-context: orch
`, srv.URL)))
	c.admin = &rest.Config{Host: srv.URL, BearerToken: "admin-token", TLSClientConfig: rest.TLSClientConfig{CAData: serverCA}}
	return c
}

func (c *csrCluster) csrs(t *testing.T, signer string) []certificatesv1.CertificateSigningRequest {
	t.Helper()
	client, err := certificate.NewClient(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	list := &certificatesv1.CertificateSigningRequestList{}
	if err := client.Get().Resource("certificatesigningrequests").Do(context.Background()).Into(list); err != nil {
		t.Fatal(err)
	}
	var out []certificatesv1.CertificateSigningRequest
	for _, csr := range list.Items {
		if csr.Spec.SignerName == signer {
			out = append(out, csr)
		}
	}
	return out
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	if block == nil {
		t.Fatalf("%s holds no PEM", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// The agent without --orchconfig's file bootstraps: it asks a client certificate with the
// bootstrap token, which the server's approver approves and its signer issues; it stores it under
// --cert-dir, writes --orchconfig and registers its node with it. Its serving certificate request
// waits for a person, and the HTTPS server has no certificate until then. When the mock clock
// passes 70-90% of the client certificate's lifetime, the agent renews it (approved as its own
// node's) and the API server sees the new certificate without a restart.
func TestBootstrapAndRotation(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Now())
	c := newCSRCluster(t, clk)
	dir := t.TempDir()
	orchconfig, pki := filepath.Join(dir, "orchlet.conf"), filepath.Join(dir, "pki")
	port := apptest.FreePort(t)
	o := parse(t, apptest.WithRuntime(t, "--orchconfig="+orchconfig, "--bootstrap-kubeconfig="+c.bootKubeconfig, "--cert-dir="+pki,
		"--rotate-certificates", "--rotate-server-certificates", "--hostname-override=node-b", "--node-ip=127.0.0.1",
		"--enable-server=true", "--address=127.0.0.1", "--port="+port, "--kube-api-content-type=application/json")...)
	cancel, done := runAsync(o, host.NewFake(), clk)
	defer func() {
		cancel()
		if err := wait(t, done); err != nil {
			t.Error(err)
		}
	}()
	admin, err := kubernetes.NewForConfig(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	waitFor(t, "the node registered with the bootstrapped certificate", func() (bool, error) {
		_, err := admin.CoreV1().Nodes().Get(ctx, "node-b", metav1.GetOptions{})
		return err == nil, err
	})

	// The client certificate: stored, linked, named in --orchconfig, for the node.
	current := filepath.Join(pki, "orchlet-client-current.pem")
	target, err := os.Readlink(current)
	if err != nil || !strings.HasPrefix(target, "orchlet-client-") || target == "orchlet-client-current.pem" {
		t.Fatalf("%s links to %q (%v)", current, target, err)
	}
	conf, err := os.ReadFile(orchconfig)
	if err != nil || !strings.Contains(string(conf), "client-certificate: "+current) || !strings.Contains(string(conf), "client-key: "+current) {
		t.Fatalf("--orchconfig written: %s (%v)", conf, err)
	}
	first := readCert(t, current)
	if first.Subject.CommonName != "system:node:node-b" || len(first.Subject.Organization) != 1 || first.Subject.Organization[0] != "system:nodes" ||
		first.CheckSignatureFrom(c.ca.Cert) != nil || first.NotAfter.Sub(first.NotBefore) != signingDuration+5*time.Minute {
		t.Fatalf("client certificate: subject %v, validity %v-%v", first.Subject, first.NotBefore, first.NotAfter)
	}
	if _, ok := c.seen.Load(first.SerialNumber.String()); !ok {
		t.Fatal("the API server never saw the bootstrapped client certificate")
	}
	clients := c.csrs(t, certificate.ClientSigner)
	if len(clients) != 1 || clients[0].Spec.Username != "system:bootstrap:abcdef" || !strings.HasPrefix(clients[0].Name, "node-csr-") ||
		len(clients[0].Status.Conditions) != 1 || clients[0].Status.Conditions[0].Reason != "AutoApproved" ||
		clients[0].Status.Conditions[0].Message != "Auto approving orchlet client certificate after SubjectAccessReview." {
		t.Fatalf("client requests: %+v", clients)
	}

	// The serving request waits for approval; meanwhile the HTTPS server presents nothing.
	var serving certificatesv1.CertificateSigningRequest
	waitFor(t, "the serving certificate request", func() (bool, error) {
		list := c.csrs(t, certificate.ServingSigner)
		if len(list) == 1 {
			serving = list[0]
		}
		return len(list) == 1, nil
	})
	if len(serving.Status.Conditions) != 0 || serving.Spec.Username != "system:node:node-b" {
		t.Fatalf("serving request: %+v", serving)
	}
	roots := x509.NewCertPool()
	roots.AddCert(c.ca.Cert)
	dial := func() (*x509.Certificate, error) {
		conn, err := tls.Dial("tcp", "127.0.0.1:"+port, &tls.Config{RootCAs: roots, Time: clk.Now})
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0], nil
	}
	waitFor(t, "the HTTPS server listening", func() (bool, error) {
		_, err := dial()
		return err != nil && strings.Contains(err.Error(), "internal error"), err
	})
	serving.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: "approved by a person"}}
	client, err := certificate.NewClient(c.admin)
	if err != nil {
		t.Fatal(err)
	}
	if err := client.Put().Resource("certificatesigningrequests").Name(serving.Name).SubResource("approval").Body(&serving).Do(ctx).Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the HTTPS server serving the issued certificate", func() (bool, error) {
		cert, err := dial()
		return err == nil && cert.Subject.CommonName == "system:node:node-b" && cert.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)), err
	})

	// Past 90% of the lifetime on the agent's clock, the client certificate is renewed.
	clk.Add(signingDuration * 95 / 100)
	waitFor(t, "the renewed client certificate in use", func() (bool, error) {
		clk.Add(time.Second) // lease renewals: requests that present the client certificate
		next := readCert(t, current)
		if next.SerialNumber.Cmp(first.SerialNumber) == 0 {
			return false, nil
		}
		_, seen := c.seen.Load(next.SerialNumber.String())
		return seen, nil
	})
	clients = c.csrs(t, certificate.ClientSigner)
	if len(clients) != 2 {
		t.Fatalf("client requests after rotation: %d", len(clients))
	}
	renewal := clients[0]
	if renewal.Spec.Username != "system:node:node-b" {
		renewal = clients[1]
	}
	if renewal.Spec.Username != "system:node:node-b" || len(renewal.Status.Conditions) == 0 ||
		renewal.Status.Conditions[0].Message != "Auto approving self orchlet client certificate after SubjectAccessReview." {
		t.Fatalf("renewal request: %+v", renewal)
	}
}
