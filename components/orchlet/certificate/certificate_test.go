package certificate

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/apiserver/storage/memory"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/certs/certstest"
)

// A certificate is renewed at 70% of its lifetime with no jitter, up to 90% with the most, and at
// once when there is none.
func TestDeadline(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	notBefore := clk.Now()
	leaf := &x509.Certificate{NotBefore: notBefore, NotAfter: notBefore.Add(100 * time.Hour)}
	for _, tt := range []struct {
		jitter float64
		cert   *tls.Certificate
		want   time.Time
	}{
		{0, &tls.Certificate{Leaf: leaf}, notBefore.Add(70 * time.Hour)},
		{0.5, &tls.Certificate{Leaf: leaf}, notBefore.Add(80 * time.Hour)},
		{0.999999, &tls.Certificate{Leaf: leaf}, notBefore.Add(90 * time.Hour)},
		{0.5, nil, clk.Now()},
	} {
		m := &Manager{o: ManagerOptions{Clock: clk, Jitter: func() float64 { return tt.jitter }}, current: tt.cert}
		if got := m.Deadline(); got.Sub(tt.want).Abs() > time.Second {
			t.Errorf("jitter %v: deadline %v, want %v", tt.jitter, got, tt.want)
		}
	}
}

// The store writes <prefix>-<timestamp>.pem on its clock and moves <prefix>-current.pem to it;
// before any update it reads the fallback files.
func TestStore(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	ca := certstest.NewCA(t, "ca")
	fallback, fallbackKey := ca.Client(t, "old").WriteFiles(t, dir, "old")
	s := NewStore(filepath.Join(dir, "pki"), "orchlet-client", fallback, fallbackKey, clk)
	if c, err := s.Current(); err != nil || c.Leaf.Subject.CommonName != "old" {
		t.Fatalf("before any update: %v, %v", c, err)
	}
	for i, cn := range []string{"first", "second"} {
		p := ca.Client(t, cn)
		c, err := s.Update(p.CertPEM, p.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		target, err := os.Readlink(s.CurrentPath())
		want := "orchlet-client-2026-11-25-10-00-0" + string(rune('0'+i)) + ".pem"
		if err != nil || target != want || c.Leaf.Subject.CommonName != cn {
			t.Fatalf("update %d: link %q (%v), want %q; leaf %v", i, target, err, want, c.Leaf.Subject)
		}
		if cur, err := s.Current(); err != nil || cur.Leaf.Subject.CommonName != cn {
			t.Fatalf("current after update %d: %v %v", i, cur, err)
		}
		clk.Add(time.Second)
	}
	if empty := NewStore(t.TempDir(), "orchlet-server", "", "", clk); func() error { _, err := empty.Current(); return err }() != ErrNoCertificate {
		t.Fatal("an empty store has a certificate")
	}
}

// A certificate renewed again within the same second (a lifetime shorter than the signer's
// backdate renews at once, over and over) replaces the pair the current link names as a whole:
// a reader never finds it empty or cut short.
func TestStoreUpdateInOneSecond(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC))
	ca := certstest.NewCA(t, "ca")
	s := NewStore(t.TempDir(), "orchlet-client", "", "", clk)
	pairs := []certstest.Pair{ca.Client(t, "a"), ca.Client(t, "b")}
	if _, err := s.Update(pairs[0].CertPEM, pairs[0].KeyPEM); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	failed := make(chan error, 1)
	go func() {
		for {
			select {
			case <-done:
				close(failed)
				return
			default:
			}
			if _, err := s.Current(); err != nil {
				failed <- err
				return
			}
		}
	}()
	for i := range 300 {
		p := pairs[i%2]
		if _, err := s.Update(p.CertPEM, p.KeyPEM); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if err := <-failed; err != nil {
		t.Fatalf("a reader during the updates: %v", err)
	}
}

// A request a person denies ends the wait with client-go's words; one approved and signed answers
// its certificate, for the key sent.
func TestObtainAgainstAPIServer(t *testing.T) {
	clk := clock.New()
	ca := certstest.NewCA(t, "orch-ca")
	st := memory.New(clk)
	stopping := make(chan struct{})
	h, err := server.New(server.Config{
		Clock: clk, Storage: st, EventTTL: time.Hour, Authenticator: authn.Union(authn.Anonymous()), Authorizer: authz.AlwaysAllow(),
		MinRequestTimeout: 30 * time.Minute, BookmarkInterval: time.Minute, Stopping: stopping,
		Signing: &server.Signing{Cert: ca.Cert, Key: ca.Key(), Duration: time.Hour},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(func() { close(stopping); srv.Close(); _ = st.Close() })
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})}}
	client, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// A person decides each pending request: the serving one approved, the client one for a user
	// of the API server client signer denied.
	decide := func(approve bool) {
		for {
			list := &certificatesv1.CertificateSigningRequestList{}
			if err := client.Get().Resource("certificatesigningrequests").Do(ctx).Into(list); err != nil {
				t.Error(err)
				return
			}
			for _, csr := range list.Items {
				if len(csr.Status.Conditions) == 0 {
					c := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue, Reason: "NotYou", Message: "not this node"}
					if approve {
						c.Type, c.Reason, c.Message = certificatesv1.CertificateApproved, "Fine", "ok"
					}
					csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{c}
					if err := client.Put().Resource("certificatesigningrequests").Name(csr.Name).SubResource("approval").Body(&csr).Do(ctx).Error(); err != nil {
						t.Error(err)
					}
					return
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// Obtain may see the decision before the person's PUT returns: each decision is awaited, so
	// the test's context is not cancelled under it.
	decided := make(chan struct{})
	go func() { defer close(decided); decide(false) }()
	_, _, err = Obtain(ctx, client, Request{Template: &x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}}, SignerName: "orch.io/orch-apiserver-client",
		Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}, GenerateName: "csr-"})
	if err == nil || err.Error() != "certificate signing request is denied, reason: NotYou, message: not this node" {
		t.Fatalf("denied: %v", err)
	}
	<-decided

	decided = make(chan struct{})
	go func() { defer close(decided); decide(true) }()
	certPEM, keyPEM, err := Obtain(ctx, client, Request{
		Template:   &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:a", Organization: []string{"system:nodes"}}, DNSNames: []string{"a"}},
		SignerName: ServingSigner, Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}, GenerateName: "csr-",
	})
	<-decided
	if err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatalf("issued certificate and key do not match: %v", err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil || leaf.Subject.CommonName != "system:node:a" || leaf.DNSNames[0] != "a" || !strings.Contains(string(keyPEM), "EC PRIVATE KEY") {
		t.Fatalf("issued %v (%v)", leaf.Subject, err)
	}
}
