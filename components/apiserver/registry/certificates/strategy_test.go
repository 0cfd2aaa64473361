package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/authn"
	"orch.io/orch/components/certs/certstest"
)

func csrPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:a", Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func valid(t *testing.T) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "csr-a"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request: csrPEM(t), SignerName: NodeClientSigner,
			Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		},
	}
}

func cond(t certificatesv1.RequestConditionType) certificatesv1.CertificateSigningRequestCondition {
	return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue}
}

func TestValidate(t *testing.T) {
	short, ten := int32(599), int32(600)
	tests := []struct {
		name   string
		change func(*certificatesv1.CertificateSigningRequest)
		want   string // "" valid
	}{
		{"valid", func(*certificatesv1.CertificateSigningRequest) {}, ""},
		{"request not PEM", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = []byte("nope") }, "spec.request: Invalid value: \"<request>\": PEM block type must be CERTIFICATE REQUEST"},
		{"request a certificate", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Request = certstest.NewCA(t, "x").PEM
		}, "PEM block type must be CERTIFICATE REQUEST"},
		{"no signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "" }, "spec.signerName: Required value"},
		{"signer unqualified", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "orch-signer" }, "must be a fully qualified domain and path of the form 'example.com/signer-name'"},
		{"signer without path", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "orch.io/" }, "must be a fully qualified domain and path"},
		{"signer domain one segment", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "orch/x" }, "should be a domain with at least two segments separated by dots"},
		{"no usages", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = nil }, "spec.usages: Required value: usages must be provided"},
		{"unknown usage", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = []certificatesv1.KeyUsage{"flying"} }, "spec.usages[0]: Unsupported value: \"flying\""},
		{"duplicate usage", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth, certificatesv1.UsageClientAuth}
		}, "spec.usages[1]: Duplicate value"},
		{"expiration too short", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = &short }, "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 600 seconds (10 minutes)"},
		{"expiration ten minutes", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = &ten }, ""},
		{"approved and denied", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved), cond(certificatesv1.CertificateDenied)}
		}, "Approved and Denied conditions are mutually exclusive"},
		{"approved twice", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved), cond(certificatesv1.CertificateApproved)}
		}, "status.conditions[1].type: Duplicate value: \"Approved\""},
		{"approved false", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionFalse}}
		}, "status.conditions[0].status: Unsupported value: \"False\""},
		{"condition without type", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Status: corev1.ConditionTrue}}
		}, "status.conditions[0].type: Required value"},
		{"certificate not PEM", func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = []byte("junk") }, "status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block"},
		{"certificate", func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = certstest.NewCA(t, "x").PEM }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			csr := valid(t)
			tt.change(csr)
			errs := Validate(csr)
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Fatalf("refused: %v", errs.ToAggregate())
			case tt.want != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tt.want)):
				t.Fatalf("errors %v, want %q", errs.ToAggregate(), tt.want)
			}
		})
	}
}

// The server decides what a write through each endpoint may change: a create starts pending with
// the requester's identity, an update of the object changes neither spec nor status, /approval
// only the conditions, /status not the spec nor the approval; nothing decided is taken back.
func TestStrategies(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	s, status, approval := Strategy{Clock: clk}, StatusStrategy{Clock: clk}, ApprovalStrategy{Clock: clk}

	created := valid(t)
	created.Spec.Username, created.Spec.Groups = "mallory", []string{"system:masters"}
	created.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved)}
	s.PrepareForCreate(created)
	s.SetRequester(created, &authn.UserInfo{Name: "system:bootstrap:abc", UID: "7", Groups: []string{"system:bootstrappers"}, Extra: map[string][]string{"k": {"v"}}})
	if len(created.Status.Conditions) != 0 || created.Spec.Username != "system:bootstrap:abc" || created.Spec.UID != "7" ||
		len(created.Spec.Groups) != 1 || created.Spec.Groups[0] != "system:bootstrappers" || created.Spec.Extra["k"][0] != "v" {
		t.Fatalf("created: spec %+v status %+v", created.Spec, created.Status)
	}
	s.SetRequester(created, nil)
	if created.Spec.Username != "" || created.Spec.Groups != nil {
		t.Fatalf("an anonymous-less request kept a claimed identity: %+v", created.Spec)
	}

	old := valid(t)
	old.Spec.Username = "system:node:a"
	tests := []struct {
		name   string
		prep   func(obj, old *certificatesv1.CertificateSigningRequest)
		change func(*certificatesv1.CertificateSigningRequest)
		check  func(*certificatesv1.CertificateSigningRequest) bool
	}{
		{"update keeps spec and status", func(n, o *certificatesv1.CertificateSigningRequest) { s.PrepareForUpdate(n, o) },
			func(c *certificatesv1.CertificateSigningRequest) {
				c.Spec.Username = "root"
				c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved)}
				c.Labels = map[string]string{"a": "b"}
			},
			func(c *certificatesv1.CertificateSigningRequest) bool {
				return c.Spec.Username == "system:node:a" && len(c.Status.Conditions) == 0 && c.Labels["a"] == "b"
			}},
		{"approval changes conditions only", func(n, o *certificatesv1.CertificateSigningRequest) { approval.PrepareForUpdate(n, o) },
			func(c *certificatesv1.CertificateSigningRequest) {
				c.Spec.SignerName = "example.com/other"
				c.Status.Certificate = []byte("x")
				c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Reason: "R"}}
			},
			func(c *certificatesv1.CertificateSigningRequest) bool {
				cd := c.Status.Conditions[0]
				return c.Spec.SignerName == NodeClientSigner && c.Status.Certificate == nil && cd.Status == corev1.ConditionTrue &&
					cd.LastUpdateTime.Time.Equal(clk.Now()) && cd.LastTransitionTime.Time.Equal(clk.Now())
			}},
		{"status keeps spec and approval", func(n, o *certificatesv1.CertificateSigningRequest) { status.PrepareForUpdate(n, o) },
			func(c *certificatesv1.CertificateSigningRequest) {
				c.Spec.Usages = nil
				c.Status.Certificate = []byte("cert")
				c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved), cond(certificatesv1.CertificateFailed)}
			},
			func(c *certificatesv1.CertificateSigningRequest) bool {
				return len(c.Spec.Usages) == 2 && string(c.Status.Certificate) == "cert" && len(c.Status.Conditions) == 1 && c.Status.Conditions[0].Type == certificatesv1.CertificateFailed
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := old.DeepCopy()
			tt.change(n)
			tt.prep(n, old)
			if !tt.check(n) {
				t.Fatalf("after update: spec %+v status %+v", n.Spec, n.Status)
			}
		})
	}

	approved := old.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved)}
	approved.Status.Certificate = certstest.NewCA(t, "x").PEM
	undo := approved.DeepCopy()
	undo.Status.Conditions = nil
	undo.Status.Certificate = certstest.NewCA(t, "y").PEM
	msg := ValidateUpdate(undo, approved).ToAggregate().Error()
	for _, want := range []string{`updates may not remove a condition of type "Approved"`, "updates may not modify existing certificate content"} {
		if !strings.Contains(msg, want) {
			t.Errorf("taking back a decision: %s, want %q", msg, want)
		}
	}
	if Condition(approved) != "Approved,Issued" || Condition(old) != "Pending" {
		t.Errorf("conditions shown: %q, %q", Condition(approved), Condition(old))
	}
}
