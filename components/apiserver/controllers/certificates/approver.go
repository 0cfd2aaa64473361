package certificates

import (
	"context"
	"crypto"
	"crypto/x509"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/controllers"
	"orch.io/orch/components/apiserver/registry/certificates"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// Controller is Kubernetes' CSR approving controller (sarapprove) and signing controller together.
type Controller struct {
	Clock clock.Clock
	// CSRs is the requests' store; Status and Approval are its views through which certificates
	// and approvals are written.
	CSRs, Status, Approval *generic.Store
	// Authorizer decides whether a request's requester may have it approved.
	Authorizer authz.Authorizer
	// Signing, when set, is the CA approved requests are signed with; without it none is.
	Signing *Signing
	// Stopping closes when the server's shutdown begins: a watch failing from then on is the
	// shutdown's, not worth an error line.
	Stopping <-chan struct{}
}

// Signing is the cluster's certificate authority, with which the signer issues the certificates of
// approved requests (kube-controller-manager's --cluster-signing-* options).
type Signing struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// Duration is the longest validity of an issued certificate; a request may ask for less.
	Duration time.Duration
}

// ResyncInterval is how often every request is looked at again, beside the watch: a request
// whose approval or signing failed (a conflict, a storage error) is retried then.
const ResyncInterval = 10 * time.Second

// Run approves and signs requests as they come, until ctx ends.
func (ctrl *Controller) Run(ctx context.Context) {
	ticker := ctrl.Clock.Ticker(ResyncInterval)
	defer ticker.Stop()
	for ctx.Err() == nil {
		events, err := ctrl.CSRs.Watch(ctx, "", generic.WatchOptions{})
		if err != nil {
			if controllers.Failed(ctx, ctrl.Stopping, err) {
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

// follow handles each request the watch shows and, on every resync tick, all of them; it returns
// when the watch ends.
func (ctrl *Controller) follow(ctx context.Context, events <-chan generic.WatchEvent, resync <-chan time.Time) {
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
			list, err := ctrl.CSRs.List(ctx, "", generic.ListOptions{})
			if err != nil {
				if controllers.Failed(ctx, ctrl.Stopping, err) {
					klog.ErrorS(err, "Listing certificate signing requests")
				}
				continue
			}
			for _, obj := range generic.Items(list) {
				ctrl.sync(ctx, obj.(*certificatesv1.CertificateSigningRequest))
			}
		}
	}
}

func (ctrl *Controller) sync(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) {
	if err := ctrl.autoApprove(ctx, csr); err != nil && ctx.Err() == nil {
		klog.V(2).InfoS("Certificate signing request not approved", "csr", csr.Name, "err", err)
	}
	if ctrl.Signing == nil {
		return
	}
	if err := ctrl.sign(ctx, csr); controllers.Failed(ctx, ctrl.Stopping, err) {
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
func (ctrl *Controller) autoApprove(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) error {
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
		decision, _, err := ctrl.Authorizer.Authorize(ctx, authz.Attributes{
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
		_, _, err = ctrl.Approval.Update(ctx, "", csr.Name, next, false)
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
