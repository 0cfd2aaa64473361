package certificates

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"orch.io/orch/components/apiserver/registry/certificates"
)

// Each signer issues only what Kubernetes' would: node client certificates to system:nodes with no
// subject alternative names, node serving certificates naming a DNS name or IP, client
// certificates for client auth alone.
func TestSignerChecks(t *testing.T) {
	node := pkix.Name{CommonName: "system:node:n", Organization: []string{"system:nodes"}}
	client := sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth)
	serving := sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth)
	for _, tc := range []struct {
		name   string
		signer string
		req    x509.CertificateRequest
		usages sets.Set[certificatesv1.KeyUsage]
		want   string // "" when issued
	}{
		{"node client", certificates.NodeClientSigner, x509.CertificateRequest{Subject: node}, client, ""},
		{"node client with a DNS name", certificates.NodeClientSigner, x509.CertificateRequest{Subject: node, DNSNames: []string{"n"}}, client, "DNS subjectAltNames are not allowed"},
		{"node client of another group", certificates.NodeClientSigner, x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n"}}, client, "subject organization is not system:nodes"},
		{"node client named otherwise", certificates.NodeClientSigner, x509.CertificateRequest{Subject: pkix.Name{CommonName: "n", Organization: []string{"system:nodes"}}}, client, "does not begin with system:node:"},
		{"node client serving", certificates.NodeClientSigner, x509.CertificateRequest{Subject: node}, serving, "usages did not match"},
		{"node serving", certificates.NodeServingSigner, x509.CertificateRequest{Subject: node, IPAddresses: []net.IP{net.IPv4(10, 0, 0, 1)}}, serving, ""},
		{"node serving naming nothing", certificates.NodeServingSigner, x509.CertificateRequest{Subject: node}, serving, "DNS or IP subjectAltName is required"},
		{"client", certificates.ClientSigner, x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}}, client, ""},
		{"client serving too", certificates.ClientSigner, x509.CertificateRequest{}, sets.New(certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth), "invalid usage for client certificate"},
		{"client without client auth", certificates.ClientSigner, x509.CertificateRequest{}, sets.New(certificatesv1.UsageDigitalSignature), "missing required usages"},
	} {
		err := signerChecks[tc.signer](&tc.req, tc.usages)
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
