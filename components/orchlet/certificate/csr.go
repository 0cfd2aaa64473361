package certificate

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	orchcertificatesv1 "orch.io/orch/components/apis/certificates/v1"
)

// GroupVersion is where the API server serves certificate signing requests.
var GroupVersion = orchcertificatesv1.SchemeGroupVersion

// The signers the agent asks, Kubernetes' kubelet signers renamed.
const (
	ClientSigner  = orchcertificatesv1.NodeClientSigner
	ServingSigner = orchcertificatesv1.NodeServingSigner
)

var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	s.AddKnownTypes(GroupVersion, &certificatesv1.CertificateSigningRequest{}, &certificatesv1.CertificateSigningRequestList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return s
}()

// NewClient returns a client of certificates.orch.io/v1 over cfg, in JSON.
func NewClient(cfg *rest.Config) (*rest.RESTClient, error) {
	c := rest.CopyConfig(cfg)
	c.APIPath = "/apis"
	c.GroupVersion = &GroupVersion
	c.ContentType, c.AcceptContentTypes = "application/json", "application/json"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	return rest.RESTClientFor(c)
}

// Request is one certificate the agent asks for.
type Request struct {
	Template   *x509.CertificateRequest
	SignerName string
	Usages     []certificatesv1.KeyUsage
	// GenerateName prefixes the request's generated name (csr-, node-csr-).
	GenerateName string
}

// Send creates the signing request of r for key, and answers its name and uid.
func Send(ctx context.Context, client rest.Interface, r Request, key crypto.Signer) (string, types.UID, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, r.Template, key)
	if err != nil {
		return "", "", fmt.Errorf("making the certificate request: %w", err)
	}
	csr := &certificatesv1.CertificateSigningRequest{
		TypeMeta:   metav1.TypeMeta{Kind: "CertificateSigningRequest", APIVersion: GroupVersion.String()},
		ObjectMeta: metav1.ObjectMeta{GenerateName: r.GenerateName},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: r.SignerName, Usages: r.Usages,
		},
	}
	out := &certificatesv1.CertificateSigningRequest{}
	if err := client.Post().Resource("certificatesigningrequests").Body(csr).Do(ctx).Into(out); err != nil {
		return "", "", fmt.Errorf("cannot create certificate signing request: %w", err)
	}
	return out.Name, out.UID, nil
}

// Wait watches the request name until it is issued, and answers the certificate (PEM); a denied
// or failed request is an error in client-go's words.
func Wait(ctx context.Context, client rest.Interface, name string, uid types.UID) ([]byte, error) {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	for {
		list := &certificatesv1.CertificateSigningRequestList{}
		if err := client.Get().Resource("certificatesigningrequests").Param("fieldSelector", selector).Do(ctx).Into(list); err != nil {
			return nil, err
		}
		for i := range list.Items {
			if cert, done, err := issued(&list.Items[i], uid); done || err != nil {
				return cert, err
			}
		}
		w, err := client.Get().Resource("certificatesigningrequests").Param("fieldSelector", selector).
			Param("resourceVersion", list.ResourceVersion).Param("watch", "true").Watch(ctx)
		if err != nil {
			return nil, err
		}
		cert, done, err := follow(ctx, w, name, uid)
		w.Stop()
		if done || err != nil {
			return cert, err
		}
	}
}

// follow reads the watch until the request is decided or the watch ends (done false, nil error:
// list again).
func follow(ctx context.Context, w watch.Interface, name string, uid types.UID) ([]byte, bool, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, false, nil
			}
			switch ev.Type {
			case watch.Deleted:
				return nil, false, fmt.Errorf("csr %q was deleted", name)
			case watch.Error:
				return nil, false, nil
			}
			csr, isCSR := ev.Object.(*certificatesv1.CertificateSigningRequest)
			if !isCSR {
				continue
			}
			if cert, done, err := issued(csr, uid); done || err != nil {
				return cert, done, err
			}
		}
	}
}

func issued(csr *certificatesv1.CertificateSigningRequest, uid types.UID) ([]byte, bool, error) {
	if csr.UID != uid {
		return nil, false, fmt.Errorf("csr %q changed UIDs", csr.Name)
	}
	approved := false
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateDenied:
			return nil, false, fmt.Errorf("certificate signing request is denied, reason: %v, message: %v", c.Reason, c.Message)
		case certificatesv1.CertificateFailed:
			return nil, false, fmt.Errorf("certificate signing request failed, reason: %v, message: %v", c.Reason, c.Message)
		case certificatesv1.CertificateApproved:
			approved = c.Status == corev1.ConditionTrue || c.Status == ""
		}
	}
	if approved && len(csr.Status.Certificate) > 0 {
		return csr.Status.Certificate, true, nil
	}
	return nil, false, nil
}

// Obtain sends r with a new ECDSA P-256 key, waits for the certificate and answers it with the
// key, both PEM.
func Obtain(ctx context.Context, client rest.Interface, r Request) (certPEM, keyPEM []byte, err error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, nil, err
	}
	name, uid, err := Send(ctx, client, r, key)
	if err != nil {
		return nil, nil, err
	}
	certPEM, err = Wait(ctx, client, name, uid)
	if err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}
