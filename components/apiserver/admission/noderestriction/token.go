package noderestriction

import (
	"context"
	"errors"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch.io/orch/components/apiserver/admission"
	"orch.io/orch/components/authz"
)

// admitToken is NodeRestriction's admission of a node's TokenRequest, as sent, before the server
// defaults it: bound to a pod, by uid, that runs on the node, for no audience or one that a service
// account token projection of the pod names or that the node is authorized to request
// (ServiceAccountNodeAudienceRestriction, on by default since Kubernetes 1.33).
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
	if podReferencesAudience(pod, audience) {
		return nil
	}
	return p.authorizeAudience(ctx, audience, a, forbid)
}

// requestAudienceVerb is the verb an authorizer grants a node to request service account tokens
// for an audience no pod of its projects: on the resource named as the audience ("*" for any), and
// the service account as the resource name (none for all), in the API's core group; with RBAC a
// ClusterRole's rule {apiGroups: [""], resources: [audience], verbs: [request-serviceaccounts-token-audience]}
// bound to the node.
const requestAudienceVerb = "request-serviceaccounts-token-audience"

// authorizeAudience is Kubernetes' validateNodeServiceAccountAudience past the pod's projections:
// the node's request is allowed when the authorizer allows it the audience for the service account
// in its namespace. An allow counts even with an error, as an authorizer like RBAC may allow while
// some binding failed to resolve.
func (p *Plugin) authorizeAudience(ctx context.Context, audience string, a admission.Attributes, forbid func(error) error) error {
	if p.Authorizer == nil {
		return forbid(fmt.Errorf("audience %q not found in pod spec volume, %s is not authorized to request tokens for this audience", audience, a.User.Name))
	}
	decision, _, err := p.Authorizer.Authorize(ctx, authz.Attributes{
		User: a.User, Verb: requestAudienceVerb, Namespace: a.Namespace, APIVersion: "v1",
		Resource: audience, Name: a.Name, ResourceRequest: true,
	})
	switch {
	case decision == authz.DecisionAllow:
		return nil
	case err != nil:
		return forbid(fmt.Errorf("audience %q not found in pod spec volume, error authorizing %s to request tokens for this audience: %w", audience, a.User.Name, err))
	}
	return forbid(fmt.Errorf("audience %q not found in pod spec volume, %s is not authorized to request tokens for this audience", audience, a.User.Name))
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
