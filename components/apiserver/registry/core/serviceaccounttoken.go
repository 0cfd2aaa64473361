package core

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/benbjohnson/clock"
	restful "github.com/emicklei/go-restful/v3"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"orch.io/orch/components/apiserver/admission"
	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authn/serviceaccount"
)

// TokenRequest's limits and default, as Kubernetes' ValidateTokenRequest and v1 defaulting.
const (
	minTokenExpiration     = 10 * time.Minute
	maxTokenExpiration     = (1 << 32) * time.Second
	defaultTokenExpiration = time.Hour
)

// TokenRequestGVK is the kind the token subresource takes and answers: Kubernetes'
// authentication.k8s.io/v1 TokenRequest, in orch's authentication group.
var TokenRequestGVK = authn.TokenReviewGroupVersion.WithKind("TokenRequest")

// TokenREST is serviceaccounts/token, Kubernetes' TokenREST: a token for the service account,
// bound to the pod the request names, for its audiences (the API's by default).
type TokenREST struct {
	Issuer *serviceaccount.Issuer
	// Audiences are the API's (--api-audiences): a TokenRequest naming none gets them.
	Audiences []string
	// MaxExpiration, when positive, shortens longer requests (--service-account-max-token-expiration).
	MaxExpiration time.Duration
	Clock         clock.Clock
	// ServiceAccounts, Pods and Nodes are the stores a token's subjects are read from.
	ServiceAccounts, Pods, Nodes *generic.Store
	// Admission judges each request as sent (NodeRestriction's rules for nodes).
	Admission generic.Admission
}

// Subresource describes serviceaccounts/token to the endpoints.
func (t TokenREST) Subresource() endpoints.Subresource {
	return endpoints.Subresource{Name: "token", Method: http.MethodPost, Verbs: []string{"create"}, Kind: TokenRequestGVK.Kind,
		Group: TokenRequestGVK.Group, Version: TokenRequestGVK.Version, Handler: endpoints.CreateHandler(TokenRequestGVK, t.create)}
}

func (t TokenREST) create(req *restful.Request, w http.ResponseWriter, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	return t.issue(req.Request.Context(), w, req.PathParameter("namespace"), req.PathParameter("name"), tr)
}

func (t TokenREST) issue(ctx context.Context, w http.ResponseWriter, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	gk := TokenRequestGVK.GroupKind()
	if tr.Name != "" && tr.Name != name {
		return nil, apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), tr.Name, "must match the service account name if specified")})
	}
	if tr.Namespace != "" && tr.Namespace != namespace {
		return nil, apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "namespace"), tr.Namespace, "must match the service account namespace if specified")})
	}
	// Admission judges the request as sent, before the server defaults it (NodeRestriction).
	user, _ := authn.UserFrom(ctx)
	if err := t.Admission.Admit(ctx, admission.Attributes{
		Operation: admission.Create, Kind: gk, Resource: corev1.Resource("serviceaccounts"), Subresource: "token",
		Namespace: namespace, Name: name, Object: tr, User: user,
	}); err != nil {
		return nil, err
	}
	obj, err := t.ServiceAccounts.Get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	sa := obj.(*corev1.ServiceAccount)
	if tr.UID != "" && tr.UID != sa.UID {
		// TokenRequestServiceAccountUIDValidation, on as in Kubernetes.
		return nil, apierrors.NewConflict(schema.GroupResource{Group: gk.Group, Resource: gk.Kind}, name, fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", tr.UID, sa.UID))
	}
	if len(tr.Spec.Audiences) == 0 {
		tr.Spec.Audiences = slices.Clone(t.Audiences)
	}
	if tr.Spec.ExpirationSeconds == nil {
		d := int64(defaultTokenExpiration / time.Second)
		tr.Spec.ExpirationSeconds = &d
	}
	tr.Name, tr.Namespace = sa.Name, sa.Namespace
	// The time is taken before the token is made, so the status' expiration is never after exp.
	now := t.Clock.Now()
	tr.CreationTimestamp = metav1.NewTime(now)
	tr.Status = authenticationv1.TokenRequestStatus{}
	if errs := validateTokenRequest(tr); len(errs) > 0 {
		return nil, apierrors.NewInvalid(gk, "", errs)
	}
	binding := serviceaccount.Binding{ServiceAccount: sa}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		if gvk.Group != "" || gvk.Kind != "Pod" {
			// Kubernetes also binds to Nodes and Secrets; orch issues pod-bound tokens only.
			return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
		}
		obj, err := t.Pods.Get(ctx, namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		pod := obj.(*corev1.Pod)
		if name != pod.Spec.ServiceAccountName {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", name))
		}
		if ref.UID != "" && ref.UID != pod.UID {
			return nil, apierrors.NewConflict(schema.GroupResource{Resource: gvk.Kind}, ref.Name, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
		}
		binding.Pod = pod
		if pod.Spec.NodeName != "" {
			// The node is recorded when it can be read; a token is not refused for it.
			if obj, err := t.Nodes.Get(ctx, "", pod.Spec.NodeName); err == nil {
				binding.Node = obj.(*corev1.Node)
			}
		}
	}
	if max := int64(t.MaxExpiration / time.Second); max > 0 && *tr.Spec.ExpirationSeconds > max {
		endpoints.AddWarning(w, fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *tr.Spec.ExpirationSeconds, max))
		*tr.Spec.ExpirationSeconds = max
	}
	expiration := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	token, err := t.Issuer.Token(binding, now, expiration, tr.Spec.Audiences)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("failed to generate token: %v", err))
	}
	tr.Status = authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(now.Add(expiration))}
	return tr, nil
}

// validateTokenRequest is Kubernetes' ValidateTokenRequest.
func validateTokenRequest(tr *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("spec", "expirationSeconds")
	switch s := *tr.Spec.ExpirationSeconds; {
	case s < int64(minTokenExpiration/time.Second):
		errs = append(errs, field.Invalid(path, s, "may not specify a duration less than 10 minutes"))
	case s > int64(maxTokenExpiration/time.Second):
		errs = append(errs, field.Invalid(path, s, "may not specify a duration larger than 2^32 seconds"))
	}
	return errs
}
