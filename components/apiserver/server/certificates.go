package server

import (
	"context"
	"crypto"
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
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/apiserver/registry/certificates"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// Signing is the cluster's certificate authority, with which the server's signer issues the
// certificates of approved requests (kube-controller-manager's --cluster-signing-* options).
type Signing struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// Duration is the longest validity of an issued certificate; a request may ask for less.
	Duration time.Duration
}

// csrStores are certificatesigningrequests and their status and approval subresources.
type csrStores struct {
	csrs, status, approval *generic.Store
}

// csrResyncInterval is how often every request is looked at again, beside the watch: a request
// whose approval or signing failed (a conflict, a storage error) is retried then.
const csrResyncInterval = 10 * time.Second

// addCertificates serves certificates.orch.io/v1 and starts its controllers: the approver of node
// client requests, and the signer when c.Signing is set.
func (r *registry) addCertificates(c Config, newStore func(generic.Strategy) (*generic.Store, error)) error {
	csrs, err := newStore(certificates.Strategy{Clock: c.Clock})
	if err != nil {
		return err
	}
	approval := certificates.ApprovalStrategy{Clock: c.Clock}
	s := &csrStores{
		csrs: csrs, status: csrs.WithUpdates("status", certificates.StatusStrategy{Clock: c.Clock}),
		approval: certificates.ApprovalView(csrs, approval),
	}
	r.csrs = s
	r.groups = append(r.groups, endpoints.GroupVersion{GroupVersion: certificates.GroupVersion, Resources: []endpoints.Resource{
		{Store: csrs, Status: s.status, Singular: "certificatesigningrequest", ShortNames: []string{"csr"},
			SelectableFields: certificates.SelectableFieldNames,
			Subresources:     []endpoints.Subresource{certificates.NewApprovalREST(csrs, r.admission, approval).Subresource()}},
	}})
	return nil
}

// runCSRControllers approves and signs requests as they come, until ctx ends.
func (s *csrStores) runCSRControllers(ctx context.Context, c Config) {
	ctrl := csrController{stores: s, authorizer: c.Authorizer, signing: c.Signing, now: c.Clock.Now}
	ticker := c.Clock.Ticker(csrResyncInterval)
	defer ticker.Stop()
	for ctx.Err() == nil {
		events, err := s.csrs.Watch(ctx, "", generic.WatchOptions{})
		if err != nil {
			if !closed(c.Stopping) {
				klog.ErrorS(err, "Watching certificate signing requests")
			}
			select {
			case <-ctx.Done():
			case <-ticker.C:
			}
			continue
		}
		ctrl.follow(ctx, events, ticker.C) // until the watch ends: then watch again
	}
}

// csrController is Kubernetes' CSR approving controller (sarapprove) and signing controller
// together.
type csrController struct {
	stores     *csrStores
	authorizer authz.Authorizer
	signing    *Signing
	now        func() time.Time
}

// follow handles each request the watch shows and, on every resync tick, all of them; it returns
// when the watch ends.
func (ctrl csrController) follow(ctx context.Context, events <-chan generic.WatchEvent, resync <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events:
			if !ok {
				return
			}
			if csr, isCSR := ev.Object.(*certificatesv1.CertificateSigningRequest); isCSR && ev.Type != watch.Deleted {
				ctrl.sync(ctx, csr)
			}
		case <-resync:
			list, err := ctrl.stores.csrs.List(ctx, "", generic.ListOptions{})
			if err != nil {
				klog.ErrorS(err, "Listing certificate signing requests")
				continue
			}
			for _, obj := range generic.Items(list) {
				ctrl.sync(ctx, obj.(*certificatesv1.CertificateSigningRequest))
			}
		}
	}
}

func (ctrl csrController) sync(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) {
	if err := ctrl.autoApprove(ctx, csr); err != nil && ctx.Err() == nil {
		klog.V(2).InfoS("Certificate signing request not approved", "csr", csr.Name, "err", err)
	}
	if ctrl.signing == nil {
		return
	}
	if err := ctrl.sign(ctx, csr); err != nil && ctx.Err() == nil {
		klog.ErrorS(err, "Signing certificate signing request", "csr", csr.Name)
	}
}

// approvalRecognizer is one kind of request the approver recognizes and the permission its
// requester needs for it to be approved.
type approvalRecognizer struct {
	recognize   func(*certificatesv1.CertificateSigningRequest, *x509.CertificateRequest) bool
	subresource string
	message     string
}

var recognizers = []approvalRecognizer{
	{recognize: isSelfNodeClientCert, subresource: "selfnodeclient", message: "Auto approving self orchlet client certificate after SubjectAccessReview."},
	{recognize: isNodeClientCert, subresource: "nodeclient", message: "Auto approving orchlet client certificate after SubjectAccessReview."},
}

// autoApprove approves a pending node client request whose requester may create
// certificatesigningrequests/nodeclient (or, for its own node's certificate, selfnodeclient), as
// Kubernetes' sarapprove does; serving requests wait for a person.
func (ctrl csrController) autoApprove(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
	if len(csr.Status.Certificate) != 0 || certificates.HasCondition(csr, certificatesv1.CertificateApproved) || certificates.HasCondition(csr, certificatesv1.CertificateDenied) {
		return nil
	}
	x509cr, err := certificates.ParseCSR(csr.Spec.Request)
	if err != nil {
		return fmt.Errorf("unable to parse csr %q: %v", csr.Name, err)
	}
	var tried []string
	for _, r := range recognizers {
		if !r.recognize(csr, x509cr) {
			continue
		}
		tried = append(tried, r.subresource)
		user := &authn.UserInfo{Name: csr.Spec.Username, UID: csr.Spec.UID, Groups: csr.Spec.Groups}
		if len(csr.Spec.Extra) > 0 {
			user.Extra = map[string][]string{}
			for k, v := range csr.Spec.Extra {
				user.Extra[k] = v
			}
		}
		decision, _, err := ctrl.authorizer.Authorize(ctx, authz.Attributes{
			User: user, Verb: "create", APIGroup: certificates.GroupVersion.Group, APIVersion: "*",
			Resource: "certificatesigningrequests", Subresource: r.subresource, ResourceRequest: true,
		})
		if err != nil {
			return err
		}
		if decision != authz.DecisionAllow {
			continue
		}
		next := csr.DeepCopy()
		next.Status.Conditions = append(next.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AutoApproved", Message: r.message,
		})
		_, _, err = ctrl.stores.approval.Update(ctx, "", csr.Name, next, false)
		return err
	}
	if len(tried) != 0 {
		return fmt.Errorf("recognized csr %q as %v but subject access review was not approved", csr.Name, tried)
	}
	return nil
}

func isNodeClientCert(csr *certificatesv1.CertificateSigningRequest, x509cr *x509.CertificateRequest) bool {
	return csr.Spec.SignerName == certificates.NodeClientSigner && validateNodeClientCSR(x509cr, sets.New(csr.Spec.Usages...)) == nil
}

func isSelfNodeClientCert(csr *certificatesv1.CertificateSigningRequest, x509cr *x509.CertificateRequest) bool {
	return isNodeClientCert(csr, x509cr) && csr.Spec.Username == x509cr.Subject.CommonName
}

// The usages node certificates carry, with and without key encipherment (RSA keys need it).
var (
	nodeClientUsages        = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth)
	nodeClientUsagesRSA     = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth)
	nodeServingUsages       = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth)
	nodeServingUsagesRSA    = sets.New(certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth)
	errOrganizationNotNodes = errors.New("subject organization is not system:nodes")
	errCommonNameNotNode    = errors.New("subject common name does not begin with system:node:")
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
func (ctrl csrController) sign(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
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
	_, _, err = ctrl.stores.status.Update(ctx, "", csr.Name, next, false)
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
func (ctrl csrController) issue(req *x509.CertificateRequest, spec certificatesv1.CertificateSigningRequestSpec) ([]byte, error) {
	now := ctrl.now()
	ttl := ctrl.signing.Duration
	if s := spec.ExpirationSeconds; s != nil && time.Duration(*s)*time.Second < ttl {
		ttl = time.Duration(*s) * time.Second
	}
	notAfter := now.Add(ttl - backdate)
	if ttl < shortCertificate {
		notAfter = now.Add(ttl)
	}
	if ca := ctrl.signing.Cert.NotAfter; notAfter.After(ca) {
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
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ctrl.signing.Cert, req.PublicKey, ctrl.signing.Key)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}
