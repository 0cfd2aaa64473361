package certificates

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"orch.io/orch/components/apiserver/registry/certificates"
	"orch.io/orch/components/authz"
)

// The usages node certificates carry, with and without key encipherment (RSA keys need it).
var (
	nodeClientUsages        = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth)
	nodeClientUsagesRSA     = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth)
	nodeServingUsages       = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth)
	nodeServingUsagesRSA    = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth)
	errOrganizationNotNodes = errors.New("subject organization is not system:nodes")
	//lint:ignore ST1005 Kubernetes' message: the colon is the prefix's
	errCommonNameNotNode = errors.New("subject common name does not begin with system:node:")
)

// validateNodeClientCSR is Kubernetes' ValidateKubeletClientCSR.
func validateNodeClientCSR(req *x509.CertificateRequest, usages sets.Set[certificatesv1.KeyUsage]) error {
	if len(req.Subject.Organization) != 1 || req.Subject.Organization[0] != authz.NodesGroup {
		return errOrganizationNotNodes
	}
	switch {
	case len(req.DNSNames) > 0:
		return errors.New("DNS subjectAltNames are not allowed")
	case len(req.EmailAddresses) > 0:
		//lint:ignore ST1005 Kubernetes' message, word for word
		return errors.New("Email subjectAltNames are not allowed")
	case len(req.IPAddresses) > 0:
		return errors.New("IP subjectAltNames are not allowed")
	case len(req.URIs) > 0:
		return errors.New("URI subjectAltNames are not allowed")
	}
	if len(req.Subject.CommonName) <= len(authz.NodeUserPrefix) || req.Subject.CommonName[:len(authz.NodeUserPrefix)] != authz.NodeUserPrefix {
		return errCommonNameNotNode
	}
	if !usages.Equal(nodeClientUsages) && !usages.Equal(nodeClientUsagesRSA) {
		return fmt.Errorf("usages did not match %v", sets.List(nodeClientUsages))
	}
	return nil
}

// validateNodeServingCSR is Kubernetes' ValidateKubeletServingCSR.
func validateNodeServingCSR(req *x509.CertificateRequest, usages sets.Set[certificatesv1.KeyUsage]) error {
	if len(req.Subject.Organization) != 1 || req.Subject.Organization[0] != authz.NodesGroup {
		return errOrganizationNotNodes
	}
	switch {
	case len(req.DNSNames) == 0 && len(req.IPAddresses) == 0:
		return errors.New("DNS or IP subjectAltName is required")
	case len(req.EmailAddresses) > 0:
		//lint:ignore ST1005 Kubernetes' message, word for word
		return errors.New("Email subjectAltNames are not allowed")
	case len(req.URIs) > 0:
		return errors.New("URI subjectAltNames are not allowed")
	}
	if len(req.Subject.CommonName) <= len(authz.NodeUserPrefix) || req.Subject.CommonName[:len(authz.NodeUserPrefix)] != authz.NodeUserPrefix {
		return errCommonNameNotNode
	}
	if !usages.Equal(nodeServingUsages) && !usages.Equal(nodeServingUsagesRSA) {
		return fmt.Errorf("usages did not match %v", sets.List(nodeServingUsages))
	}
	return nil
}

// validateClientCSR is what the orch-apiserver-client signer asks: client auth, no server auth.
func validateClientCSR(_ *x509.CertificateRequest, usages sets.Set[certificatesv1.KeyUsage]) error {
	if !usages.Has(certificatesv1.UsageClientAuth) {
		return errors.New("missing required usages: [client auth]")
	}
	if usages.Has(certificatesv1.UsageServerAuth) || usages.Has(certificatesv1.UsageCodeSigning) {
		return errors.New("invalid usage for client certificate")
	}
	return nil
}

// signerChecks are the signers this server runs and what each requires of a request.
var signerChecks = map[string]func(*x509.CertificateRequest, sets.Set[certificatesv1.KeyUsage]) error{
	certificates.NodeClientSigner:  validateNodeClientCSR,
	certificates.NodeServingSigner: validateNodeServingCSR,
	certificates.ClientSigner:      validateClientCSR,
}

// sign issues the certificate of an approved request of one of the server's signers, or marks it
// Failed when the signer will not issue what it asks, as Kubernetes' signing controller does.
func (ctrl *Controller) sign(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
	check, ours := signerChecks[csr.Spec.SignerName]
	if !ours || len(csr.Status.Certificate) != 0 || !certificates.HasCondition(csr, certificatesv1.CertificateApproved) ||
		certificates.HasCondition(csr, certificatesv1.CertificateFailed) {
		return nil
	}
	x509cr, err := certificates.ParseCSR(csr.Spec.Request)
	if err != nil {
		return fmt.Errorf("unable to parse csr %q: %v", csr.Name, err)
	}
	next := csr.DeepCopy()
	if err := check(x509cr, sets.New(csr.Spec.Usages...)); err != nil {
		next.Status.Conditions = append(next.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: "SignerValidationFailure", Message: err.Error(),
		})
	} else if next.Status.Certificate, err = ctrl.issue(x509cr, csr.Spec); err != nil {
		return err
	}
	_, _, err = ctrl.Status.Update(ctx, "", csr.Name, next, false)
	return err
}

// An issued certificate starts backdate before now, against clock skew; one that lives at least
// shortCertificate ends backdate early, so it lives exactly its duration (Kubernetes' signer).
const (
	backdate         = 5 * time.Minute
	shortCertificate = 8 * time.Hour
)

// issue signs the request with the cluster CA for the shorter of the cluster's duration and the
// request's expirationSeconds, never past the CA's own expiry.
func (ctrl *Controller) issue(req *x509.CertificateRequest, spec certificatesv1.CertificateSigningRequestSpec) ([]byte, error) {
	now := ctrl.Clock.Now()
	ttl := ctrl.Signing.Duration
	if s := spec.ExpirationSeconds; s != nil && time.Duration(*s)*time.Second < ttl {
		ttl = time.Duration(*s) * time.Second
	}
	notAfter := now.Add(ttl - backdate)
	if ttl < shortCertificate {
		notAfter = now.Add(ttl)
	}
	if ca := ctrl.Signing.Cert.NotAfter; notAfter.After(ca) {
		notAfter = ca
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: req.Subject,
		DNSNames: req.DNSNames, IPAddresses: req.IPAddresses, EmailAddresses: req.EmailAddresses, URIs: req.URIs,
		NotBefore: now.Add(-backdate), NotAfter: notAfter, BasicConstraintsValid: true,
	}
	for _, u := range spec.Usages {
		switch u {
		case certificatesv1.UsageDigitalSignature:
			tmpl.KeyUsage |= x509.KeyUsageDigitalSignature
		case certificatesv1.UsageKeyEncipherment:
			tmpl.KeyUsage |= x509.KeyUsageKeyEncipherment
		case certificatesv1.UsageClientAuth:
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		case certificatesv1.UsageServerAuth:
			tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ctrl.Signing.Cert, req.PublicKey, ctrl.Signing.Key)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
