package authn

import (
	"crypto/x509"
	"fmt"
	"net/http"
)

// X509 returns the authenticator of --client-ca-file: a client certificate that verifies against
// pool (with the other certificates the client sent as intermediates, for client authentication)
// authenticates as its subject's CommonName, with its Organizations as groups, plus
// system:authenticated, as in Kubernetes.
//
// A request without a client certificate, or whose certificate has no CommonName, gets no opinion;
// a certificate that does not verify is an error (401). The server must request client
// certificates without verifying them itself (tls.RequestClientCert), so that an unknown
// certificate reaches this authenticator rather than failing the handshake.
func X509(pool *x509.CertPool) Authenticator {
	return x509Authenticator{pool: pool}
}

type x509Authenticator struct {
	pool *x509.CertPool
}

func (a x509Authenticator) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	opts := x509.VerifyOptions{
		Roots:         a.pool,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, c := range r.TLS.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := leaf.Verify(opts); err != nil {
		return nil, false, fmt.Errorf("verifying client certificate %q: %w", leaf.Subject.CommonName, err)
	}
	if leaf.Subject.CommonName == "" {
		return nil, false, nil
	}
	user := &UserInfo{Name: leaf.Subject.CommonName, Groups: append([]string(nil), leaf.Subject.Organization...)}
	return withAuthenticatedGroup(user), true, nil
}
