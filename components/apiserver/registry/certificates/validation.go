package certificates

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/apiserver/registry/generic"
)

// validUsages are the key usages a request may ask for, Kubernetes' list.
var validUsages = sets.New(
	"signing", "digital signature", "content commitment", "key encipherment", "key agreement",
	"data encipherment", "cert sign", "crl sign", "encipher only", "decipher only", "any",
	"server auth", "client auth", "code signing", "email protection", "s/mime",
	"ipsec end system", "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing",
	"microsoft sgc", "netscape sgc",
)

// minExpirationSeconds is the shortest validity a request may ask for.
const minExpirationSeconds = 600

// ParseCSR decodes a PEM certificate request, as Kubernetes' certificates.ParseCSR does.
func ParseCSR(pemBytes []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// Validate checks a request as Kubernetes does on create.
func Validate(csr *certificatesv1.CertificateSigningRequest) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&csr.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	if req, err := ParseCSR(csr.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), "<request>", err.Error()))
	} else if err := req.CheckSignature(); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), "<request>", err.Error()))
	}
	if len(csr.Spec.Usages) == 0 {
		errs = append(errs, field.Required(spec.Child("usages"), "usages must be provided"))
	}
	seen := sets.New[certificatesv1.KeyUsage]()
	for i, u := range csr.Spec.Usages {
		switch {
		case !validUsages.Has(string(u)):
			errs = append(errs, field.NotSupported(spec.Child("usages").Index(i), u, sets.List(validUsages)))
		case seen.Has(u):
			errs = append(errs, field.Duplicate(spec.Child("usages").Index(i), u))
		}
		seen.Insert(u)
	}
	errs = append(errs, validateSignerName(spec.Child("signerName"), csr.Spec.SignerName)...)
	if s := csr.Spec.ExpirationSeconds; s != nil && *s < minExpirationSeconds {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *s, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	return append(errs, validateStatus(field.NewPath("status"), &csr.Status)...)
}

// ValidateUpdate checks an update of any kind: the object's rules hold, the spec stays, and an
// issued certificate, an approval or a denial is never taken back.
func ValidateUpdate(n, o *certificatesv1.CertificateSigningRequest) field.ErrorList {
	errs := generic.ValidateObjectMetaUpdate(&n.ObjectMeta, &o.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, apivalidation.ValidateImmutableField(n.Spec.SignerName, o.Spec.SignerName, field.NewPath("spec", "signerName"))...)
	errs = append(errs, validateStatus(field.NewPath("status"), &n.Status)...)
	status := field.NewPath("status")
	if len(o.Status.Certificate) > 0 && !bytes.Equal(n.Status.Certificate, o.Status.Certificate) {
		errs = append(errs, field.Invalid(status.Child("certificate"), "<certificate data>", "updates may not modify existing certificate content"))
	}
	for _, t := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied, certificatesv1.CertificateFailed} {
		if HasCondition(o, t) && !HasCondition(n, t) {
			errs = append(errs, field.Forbidden(status.Child("conditions"), "updates may not remove a condition of type \""+string(t)+"\""))
		}
	}
	return errs
}

// validateSignerName requires a fully qualified domain and a path: example.com/signer-name.
func validateSignerName(path *field.Path, name string) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(path, "")}
	}
	domain, rest, ok := strings.Cut(name, "/")
	if !ok || rest == "" {
		return field.ErrorList{field.Invalid(path, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	if !strings.Contains(domain, ".") {
		errs = append(errs, field.Invalid(path, name, "should be a domain with at least two segments separated by dots"))
	}
	for _, msg := range validation.IsDNS1123Subdomain(domain) {
		errs = append(errs, field.Invalid(path, name, "validating domain: "+msg))
	}
	if len(rest) > 571 {
		errs = append(errs, field.TooLong(path, rest, 571))
	}
	return errs
}

func validateStatus(path *field.Path, s *certificatesv1.CertificateSigningRequestStatus) field.ErrorList {
	var errs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	for i, c := range s.Conditions {
		p := path.Child("conditions").Index(i)
		if c.Type == "" {
			errs = append(errs, field.Required(p.Child("type"), ""))
			continue
		}
		if isApproval(c.Type) || c.Type == certificatesv1.CertificateFailed {
			if seen[c.Type] {
				errs = append(errs, field.Duplicate(p.Child("type"), c.Type))
			}
			if isApproval(c.Type) && c.Status != corev1.ConditionTrue && c.Status != "" {
				errs = append(errs, field.NotSupported(p.Child("status"), c.Status, []string{string(corev1.ConditionTrue)}))
			}
		}
		seen[c.Type] = true
	}
	if seen[certificatesv1.CertificateApproved] && seen[certificatesv1.CertificateDenied] {
		errs = append(errs, field.Invalid(path.Child("conditions"), s.Conditions, "Approved and Denied conditions are mutually exclusive"))
	}
	if len(s.Certificate) > 0 {
		if err := validateCertificate(s.Certificate); err != nil {
			errs = append(errs, field.Invalid(path.Child("certificate"), "<certificate data>", err.Error()))
		}
	}
	return errs
}

// validateCertificate requires one or more PEM CERTIFICATE blocks, each without headers and
// parsing as a certificate.
func validateCertificate(data []byte) error {
	blocks := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return errors.New("only CERTIFICATE PEM blocks are allowed, found " + b.Type)
		}
		if len(b.Headers) > 0 {
			return errors.New("no PEM block headers are permitted")
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return err
		}
		blocks++
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}
