package noderestriction

import (
	"context"
	"errors"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch.io/orch/components/apiserver/admission"
)

// admitToken is NodeRestriction's admission of a node's TokenRequest, as sent, before the server
// defaults it: bound to a pod, by uid, that runs on the node, for no audience or one a service
// account token projection of the pod names (ServiceAccountNodeAudienceRestriction; orch has no
// RBAC to grant a node more audiences).
func (p *Plugin) admitToken(ctx context.Context, node string, a admission.Attributes) error {
	tr, ok := a.Object.(*authenticationv1.TokenRequest)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("a token request of %T", a.Object))
	}
	forbid := func(err error) error { return apierrors.NewForbidden(a.Resource, a.Name, err) }
	ref := tr.Spec.BoundObjectRef
	switch {
	case ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "":
		return forbid(errors.New("node requested token not bound to a pod"))
	case ref.UID == "":
		return forbid(errors.New("node requested token with a pod binding without a uid"))
	}
	pod, err := p.Pod(ctx, a.Namespace, ref.Name)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return forbid(err)
	}
	if ref.UID != pod.UID {
		return forbid(fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	if pod.Spec.NodeName != node {
		return forbid(errors.New("node requested token bound to a pod scheduled on a different node"))
	}
	var audience string
	switch len(tr.Spec.Audiences) {
	case 0:
	case 1:
		audience = tr.Spec.Audiences[0]
	default:
		return forbid(errors.New("node may only request 0 or 1 audiences"))
	}
	if !podReferencesAudience(pod, audience) {
		return forbid(fmt.Errorf("audience %q not found in pod spec volume, %s is not authorized to request tokens for this audience", audience, a.User.Name))
	}
	return nil
}

// podReferencesAudience tells whether one of the pod's service account token projections is for
// audience ("" for the API's).
func podReferencesAudience(pod *corev1.Pod, audience string) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil && s.ServiceAccountToken.Audience == audience {
				return true
			}
		}
	}
	return false
}
