package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apiserver/registry/certificates"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/certs/certstest"
)

const csrPath = "/apis/certificates.orch.io/v1/certificatesigningrequests"

// csrEnv serves with mode Node, a signer on ca when ca is set, and tokens for node-a, a bootstrap
// user allowed to request node client certificates (as kubeadm's RBAC binding allows), eve, who
// may create and update requests but neither ask node client ones nor approve nor sign, and an
// administrator.
func csrEnv(t *testing.T, ca *certstest.CA) *env {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	tokens := "node-a,system:node:node-a,n-a,system:nodes\nboot,system:bootstrap:abc,b-1,system:bootstrappers\neve,eve,e-1,users\nadmin,admin,u-1,admins\n"
	if err := os.WriteFile(path, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := authn.NewTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	node := &NodeAuthorization{}
	cluster := authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		switch {
		case a.User == nil:
		case a.User.Name == "admin":
			return authz.DecisionAllow, "", nil
		case a.Resource == "certificatesigningrequests" && (a.Subresource == "" || a.Verb == "update") && (a.User.Name == "eve" || a.User.Name == "system:bootstrap:abc"):
			return authz.DecisionAllow, "", nil
		case a.Resource == "certificatesigningrequests" && a.Subresource == "nodeclient" && a.Verb == "create" && a.User.Name == "system:bootstrap:abc":
			return authz.DecisionAllow, "", nil
		}
		return authz.DecisionNoOpinion, "", nil
	})
	return newEnv(t, func(c *Config) {
		c.Authenticator = authn.Union(tf)
		c.Authorizer = authz.Union(authz.Node(node.Pod), cluster)
		c.Node = node
		if ca != nil {
			c.Signing = &Signing{Cert: ca.Cert, Key: ca.Key(), Duration: 24 * time.Hour}
		}
	})
}

// request is a signing request for cn in orgs with the SANs given, PEM.
func request(t *testing.T, cn string, orgs []string, dns []string, ips []net.IP) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}, DNSNames: dns, IPAddresses: ips}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

var (
	nodes         = []string{"system:nodes"}
	clientUsages  = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	servingUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
)

func newCSR(name string, req []byte, signer string, usages []certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		TypeMeta:   metav1.TypeMeta{Kind: "CertificateSigningRequest", APIVersion: "certificates.orch.io/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       certificatesv1.CertificateSigningRequestSpec{Request: req, SignerName: signer, Usages: usages, Username: "admin", Groups: []string{"system:masters"}},
	}
}

func (e *env) getCSR(name string) *certificatesv1.CertificateSigningRequest {
	e.t.Helper()
	r := e.do(http.MethodGet, csrPath+"/"+name, nil, as("admin")...)
	if r.code != http.StatusOK {
		e.t.Fatalf("get %s: %d %s", name, r.code, r.body)
	}
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := json.Unmarshal(r.body, csr); err != nil {
		e.t.Fatal(err)
	}
	return csr
}

// settle waits until name's request is decided (issued, denied or failed). One left pending is
// answered once a bootstrap request sent after it is issued: the controllers take requests in
// order, so they have looked at it.
func (e *env) settle(name string) *certificatesv1.CertificateSigningRequest {
	e.t.Helper()
	decided := func(csr *certificatesv1.CertificateSigningRequest) bool {
		return len(csr.Status.Certificate) > 0 || certificates.HasCondition(csr, certificatesv1.CertificateDenied) ||
			certificates.HasCondition(csr, certificatesv1.CertificateFailed)
	}
	sentinel := name + "-after"
	if r := e.do(http.MethodPost, csrPath, newCSR(sentinel, request(e.t, "system:node:node-a", nodes, nil, nil), certificates.NodeClientSigner, clientUsages), as("boot")...); r.code != http.StatusCreated {
		e.t.Fatalf("sentinel: %d %s", r.code, r.body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if csr := e.getCSR(name); decided(csr) {
			return csr
		}
		if after := e.getCSR(sentinel); decided(after) {
			return e.getCSR(name)
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the controllers never issued %s", sentinel)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (e *env) approve(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) {
	e.t.Helper()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue, Reason: "ByHand", Message: "decided by a person"})
	if r := e.do(http.MethodPut, csrPath+"/"+csr.Name+"/approval", csr, as("admin")...); r.code != http.StatusOK {
		e.t.Fatalf("approval of %s: %d %s", csr.Name, r.code, r.body)
	}
}

func issuedCert(t *testing.T, csr *certificatesv1.CertificateSigningRequest) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode(csr.Status.Certificate)
	if block == nil {
		t.Fatalf("%s: no certificate issued; conditions %+v", csr.Name, csr.Status.Conditions)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// The approver approves node client requests whose requester may create
// certificatesigningrequests/nodeclient, or selfnodeclient for its own node, as Kubernetes'
// sarapprove; everything else waits for a person. The signer issues what is approved for the
// server's signers, with the cluster CA, and fails what its signer would not issue.
func TestCSRApproverAndSigner(t *testing.T) {
	ca := certstest.NewCA(t, "orch-ca")
	e := csrEnv(t, ca)
	short := int32(3600)
	tests := []struct {
		name, token string
		csr         *certificatesv1.CertificateSigningRequest
		person      certificatesv1.RequestConditionType // a person's decision, if any
		// wantApproved is the approver's message; "" when it leaves the request pending.
		wantApproved string
		wantFailed   string
		check        func(*testing.T, *x509.Certificate)
	}{
		{name: "bootstrap node client", token: "boot",
			csr:          newCSR("boot", request(t, "system:node:node-a", nodes, nil, nil), certificates.NodeClientSigner, clientUsages),
			wantApproved: "Auto approving orchlet client certificate after SubjectAccessReview.",
			check: func(t *testing.T, c *x509.Certificate) {
				if c.Subject.CommonName != "system:node:node-a" || c.NotAfter.Sub(c.NotBefore) != 24*time.Hour ||
					c.ExtKeyUsage[0] != x509.ExtKeyUsageClientAuth || c.KeyUsage != x509.KeyUsageDigitalSignature || c.CheckSignatureFrom(ca.Cert) != nil {
					t.Errorf("issued: %v %v-%v %v", c.Subject, c.NotBefore, c.NotAfter, c.ExtKeyUsage)
				}
			}},
		{name: "node renews its own client certificate", token: "node-a",
			csr:          newCSR("renew", request(t, "system:node:node-a", nodes, nil, nil), certificates.NodeClientSigner, clientUsages),
			wantApproved: "Auto approving self orchlet client certificate after SubjectAccessReview."},
		{name: "node asks another node's client certificate", token: "node-a",
			csr: newCSR("other", request(t, "system:node:node-b", nodes, nil, nil), certificates.NodeClientSigner, clientUsages)},
		{name: "requester without nodeclient permission", token: "eve",
			csr: newCSR("eve", request(t, "system:node:node-a", nodes, nil, nil), certificates.NodeClientSigner, clientUsages)},
		{name: "node client request with serving usages", token: "boot",
			csr: newCSR("usages", request(t, "system:node:node-a", nodes, nil, nil), certificates.NodeClientSigner, servingUsages)},
		{name: "node client request outside system:nodes", token: "boot",
			csr: newCSR("org", request(t, "system:node:node-a", []string{"admins"}, nil, nil), certificates.NodeClientSigner, clientUsages)},
		{name: "serving request waits for a person", token: "node-a",
			csr: newCSR("serving-pending", request(t, "system:node:node-a", nodes, []string{"node-a"}, []net.IP{net.IPv4(10, 0, 0, 1)}), certificates.NodeServingSigner, servingUsages)},
		{name: "serving request approved by a person", token: "node-a", person: certificatesv1.CertificateApproved,
			csr: func() *certificatesv1.CertificateSigningRequest {
				c := newCSR("serving", request(t, "system:node:node-a", nodes, []string{"node-a"}, []net.IP{net.IPv4(10, 0, 0, 1)}), certificates.NodeServingSigner, servingUsages)
				c.Spec.ExpirationSeconds = &short
				return c
			}(),
			check: func(t *testing.T, c *x509.Certificate) {
				if c.DNSNames[0] != "node-a" || !c.IPAddresses[0].Equal(net.IPv4(10, 0, 0, 1)) || c.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth ||
					c.NotAfter.Sub(c.NotBefore) != time.Hour+5*time.Minute {
					t.Errorf("issued: %v %v %v %v-%v", c.DNSNames, c.IPAddresses, c.ExtKeyUsage, c.NotBefore, c.NotAfter)
				}
			}},
		{name: "serving request without SANs fails", token: "node-a", person: certificatesv1.CertificateApproved,
			csr:        newCSR("serving-nosan", request(t, "system:node:node-a", nodes, nil, nil), certificates.NodeServingSigner, servingUsages),
			wantFailed: "DNS or IP subjectAltName is required"},
		{name: "client certificate for a user", token: "admin", person: certificatesv1.CertificateApproved,
			csr: newCSR("alice", request(t, "alice", []string{"dev"}, nil, nil), certificates.ClientSigner, clientUsages),
			check: func(t *testing.T, c *x509.Certificate) {
				if c.Subject.CommonName != "alice" || c.Subject.Organization[0] != "dev" {
					t.Errorf("issued: %v", c.Subject)
				}
			}},
		{name: "denied", token: "eve", person: certificatesv1.CertificateDenied,
			csr: newCSR("denied", request(t, "eve", nil, nil, nil), certificates.ClientSigner, clientUsages)},
		{name: "another signer's request", token: "eve", person: certificatesv1.CertificateApproved,
			csr: newCSR("foreign", request(t, "eve", nil, nil, nil), "example.com/signer", clientUsages)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(http.MethodPost, csrPath, tt.csr, as(tt.token)...)
			if r.code != http.StatusCreated {
				t.Fatalf("create: %d %s", r.code, r.body)
			}
			if tt.person != "" {
				e.approve(e.getCSR(tt.csr.Name), tt.person)
			}
			csr := e.settle(tt.csr.Name)
			if csr.Spec.Username == "admin" && tt.token != "admin" {
				t.Errorf("spec.username %q: the requester's claim was kept", csr.Spec.Username)
			}
			approvedBy := ""
			for _, c := range csr.Status.Conditions {
				if c.Type == certificatesv1.CertificateApproved && c.Reason == "AutoApproved" {
					approvedBy = c.Message
				}
			}
			if approvedBy != tt.wantApproved {
				t.Errorf("auto-approval %q, want %q", approvedBy, tt.wantApproved)
			}
			failed := ""
			for _, c := range csr.Status.Conditions {
				if c.Type == certificatesv1.CertificateFailed {
					failed = c.Reason + ": " + c.Message
				}
			}
			if tt.wantFailed != "" && failed != "SignerValidationFailure: "+tt.wantFailed {
				t.Errorf("failure %q, want %q", failed, tt.wantFailed)
			}
			wantIssued := tt.check != nil || (tt.wantApproved != "" && tt.wantFailed == "")
			if got := len(csr.Status.Certificate) > 0; got != wantIssued {
				t.Fatalf("issued %v, want %v; conditions %+v", got, wantIssued, csr.Status.Conditions)
			}
			if tt.check != nil {
				tt.check(t, issuedCert(t, csr))
			}
		})
	}
}

// Without --cluster-signing-cert-file nothing is signed, as in a cluster without a signer; the
// approver still approves. Protobuf clients read requests too.
func TestCSRWithoutSigner(t *testing.T) {
	e := csrEnv(t, nil)
	csr := newCSR("boot", request(t, "system:node:node-a", nodes, nil, nil), certificates.NodeClientSigner, clientUsages)
	if r := e.do(http.MethodPost, csrPath, csr, as("boot")...); r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	deadline := time.Now().Add(2 * time.Second)
	for !certificates.HasCondition(e.getCSR("boot"), certificatesv1.CertificateApproved) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // a signer, were there one, would have signed by now
	if got := e.getCSR("boot"); !certificates.HasCondition(got, certificatesv1.CertificateApproved) || len(got.Status.Certificate) > 0 {
		t.Fatalf("without a signer: conditions %+v, certificate %d bytes", got.Status.Conditions, len(got.Status.Certificate))
	}
	r := e.do(http.MethodGet, csrPath+"/boot", nil, append(as("admin"), "Accept", "application/vnd.orch.protobuf")...)
	if r.code != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "application/vnd.orch.protobuf") {
		t.Fatalf("protobuf get: %d %s", r.code, r.header.Get("Content-Type"))
	}
	// The spec is the requester's: an update of the object cannot change it.
	got := e.getCSR("boot")
	got.Spec.SignerName = certificates.ClientSigner
	if r := e.do(http.MethodPut, csrPath+"/boot", got, as("admin")...); r.code != http.StatusOK || e.getCSR("boot").Spec.SignerName != certificates.NodeClientSigner {
		t.Fatalf("update: %d, signer %q", r.code, e.getCSR("boot").Spec.SignerName)
	}
	// Approving and signing take the signer's approve and sign verbs, not just an update.
	got = e.getCSR("boot")
	got.Status.Conditions = append(got.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: "Checked", Status: corev1.ConditionTrue})
	r = e.do(http.MethodPut, csrPath+"/boot/approval", got, as("eve")...)
	if st := r.expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden); st.Message != `certificatesigningrequests.certificates.orch.io "boot" is forbidden: user not permitted to approve requests with signerName "orch.io/orch-apiserver-client-orchlet"` {
		t.Errorf("eve approving: %s", st.Message)
	}
	got.Status.Certificate = certstest.NewCA(t, "forged").PEM
	r = e.do(http.MethodPut, csrPath+"/boot/status", got, as("eve")...)
	if st := r.expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden); !strings.Contains(st.Message, `user not permitted to sign requests with signerName "orch.io/orch-apiserver-client-orchlet"`) {
		t.Errorf("eve signing: %s", st.Message)
	}
	if r := e.do(http.MethodPut, csrPath+"/boot/status", got, as("admin")...); r.code != http.StatusOK || len(e.getCSR("boot").Status.Certificate) == 0 {
		t.Errorf("admin signing: %d %s", r.code, r.body)
	}
	// Nobody asks the API server client signer for a system:masters certificate.
	masters := newCSR("masters", request(t, "eve", []string{"system:masters"}, nil, nil), certificates.ClientSigner, clientUsages)
	r = e.do(http.MethodPost, csrPath, masters, as("eve")...)
	if st := r.expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden); !strings.Contains(st.Message, "use of orch.io/orch-apiserver-client signer with system:masters group is not allowed") {
		t.Errorf("system:masters request: %s", st.Message)
	}
	// A node may not approve its own request: /approval is not a node's.
	if r := e.do(http.MethodPut, csrPath+"/boot/approval", got, as("node-a")...); r.code != http.StatusForbidden {
		t.Fatalf("node approving: %d %s", r.code, r.body)
	}
}
