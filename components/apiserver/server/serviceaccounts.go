package server

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	restful "github.com/emicklei/go-restful/v3"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/admission"
	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/apiserver/registry/core"
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

// tokenRequestGVK is the kind the token subresource takes and answers: Kubernetes'
// authentication.k8s.io/v1 TokenRequest, in orch's authentication group.
var tokenRequestGVK = authn.TokenReviewGroupVersion.WithKind("TokenRequest")

// ServiceAccounts is the server's service account token issuer (kube-apiserver's
// --service-account-* options). It is also the serviceaccount.Getter through which the
// authenticator, built before the server, reads the service accounts and pods New binds.
type ServiceAccounts struct {
	Issuer *serviceaccount.Issuer
	// Audiences are the API's (--api-audiences): a TokenRequest naming none gets them.
	Audiences []string
	// MaxExpiration, when positive, shortens longer requests (--service-account-max-token-expiration).
	MaxExpiration time.Duration

	serviceAccounts, pods atomic.Pointer[generic.Store]
	rootCA                atomic.Pointer[[]byte]
}

// SetRootCA sets the certificates (PEM) with which pods verify the server: every namespace's
// orch-root-ca.crt configmap holds them, as Kubernetes' root CA publisher publishes
// kube-root-ca.crt, and the token volume mounted into pods projects them.
func (s *ServiceAccounts) SetRootCA(pem []byte) { s.rootCA.Store(&pem) }

// ServiceAccount reads a service account (a serviceaccount.Getter).
func (s *ServiceAccounts) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	obj, err := getFrom(ctx, &s.serviceAccounts, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.ServiceAccount), nil
}

// Pod reads a pod (a serviceaccount.Getter).
func (s *ServiceAccounts) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	obj, err := getFrom(ctx, &s.pods, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

func getFrom(ctx context.Context, p *atomic.Pointer[generic.Store], namespace, name string) (any, error) {
	store := p.Load()
	if store == nil {
		return nil, apierrors.NewServiceUnavailable("the server's stores are not ready yet")
	}
	return store.Get(ctx, namespace, name)
}

// addServiceAccounts serves core/v1 serviceaccounts and, when the server issues tokens, their
// token subresource.
func (r *registry) addServiceAccounts(c Config, newStore func(generic.Strategy) (*generic.Store, error)) error {
	store, err := newStore(core.ServiceAccountStrategy{})
	if err != nil {
		return err
	}
	r.serviceAccounts = store
	res := endpoints.Resource{Store: store, Singular: "serviceaccount", ShortNames: []string{"sa"}, SelectableFields: []string{"metadata.name", "metadata.namespace"}}
	if sa := c.ServiceAccounts; sa != nil {
		sa.serviceAccounts.Store(store)
		sa.pods.Store(r.pods)
		t := tokens{ServiceAccounts: sa, r: r, clock: c.Clock}
		res.Subresources = []endpoints.Subresource{{Name: "token", Method: http.MethodPost, Verbs: []string{"create"}, Kind: tokenRequestGVK.Kind,
			Group: tokenRequestGVK.Group, Version: tokenRequestGVK.Version, Handler: t.create}}
	}
	for i := range r.groups {
		if r.groups[i].GroupVersion == core.GroupVersion {
			r.groups[i].Resources = append(r.groups[i].Resources, res)
		}
	}
	return nil
}

type tokens struct {
	*ServiceAccounts
	r     *registry
	clock clock.Clock
}

// create is serviceaccounts/token, Kubernetes' TokenREST.Create: a token for the service
// account, bound to the pod the request names, for its audiences (the API's by default).
func (t tokens) create(req *restful.Request, resp *restful.Response) {
	tr := &authenticationv1.TokenRequest{}
	if err := endpoints.DecodeCreate(resp.ResponseWriter, req.Request, tr, tokenRequestGVK); err != nil {
		endpoints.WriteError(resp.ResponseWriter, req.Request, err)
		return
	}
	out, err := t.issue(req.Request.Context(), resp.ResponseWriter, req.PathParameter("namespace"), req.PathParameter("name"), tr)
	if err != nil {
		endpoints.WriteError(resp.ResponseWriter, req.Request, err)
		return
	}
	endpoints.WriteObject(resp.ResponseWriter, req.Request, http.StatusCreated, out)
}

func (t tokens) issue(ctx context.Context, w http.ResponseWriter, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	gk := tokenRequestGVK.GroupKind()
	if tr.Name != "" && tr.Name != name {
		return nil, apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), tr.Name, "must match the service account name if specified")})
	}
	if tr.Namespace != "" && tr.Namespace != namespace {
		return nil, apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "namespace"), tr.Namespace, "must match the service account namespace if specified")})
	}
	// Admission judges the request as sent, before the server defaults it (NodeRestriction).
	user, _ := authn.UserFrom(ctx)
	if err := t.r.admission.Admit(ctx, admission.Attributes{
		Operation: admission.Create, Kind: gk, Resource: corev1.Resource("serviceaccounts"), Subresource: "token",
		Namespace: namespace, Name: name, Object: tr, User: user,
	}); err != nil {
		return nil, err
	}
	sa, err := t.ServiceAccount(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
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
	now := t.clock.Now()
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
		pod, err := t.Pod(ctx, namespace, ref.Name)
		if err != nil {
			return nil, err
		}
		if name != pod.Spec.ServiceAccountName {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", name))
		}
		if ref.UID != "" && ref.UID != pod.UID {
			return nil, apierrors.NewConflict(schema.GroupResource{Resource: gvk.Kind}, ref.Name, fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
		}
		binding.Pod = pod
		if pod.Spec.NodeName != "" {
			// The node is recorded when it can be read; a token is not refused for it.
			if obj, err := t.r.nodes.Get(ctx, "", pod.Spec.NodeName); err == nil {
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
	tr.TypeMeta = metav1.TypeMeta{APIVersion: tokenRequestGVK.GroupVersion().String(), Kind: tokenRequestGVK.Kind}
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

// runServiceAccountController makes sure every active namespace has its default service account
// and root CA configmap, as Kubernetes' serviceaccounts controller and root CA publisher do, every
// namespaceSweepInterval until ctx ends. It runs when the server issues tokens.
func (r *registry) runServiceAccountController(ctx context.Context, c Config) {
	if c.ServiceAccounts == nil {
		return
	}
	ticker := c.Clock.Ticker(namespaceSweepInterval)
	defer ticker.Stop()
	for {
		if err := r.ensureDefaultServiceAccounts(ctx, c.ServiceAccounts); err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "Creating default service accounts")
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (r *registry) ensureDefaultServiceAccounts(ctx context.Context, sa *ServiceAccounts) error {
	list, err := r.namespaces.List(ctx, "", generic.ListOptions{})
	if err != nil {
		return err
	}
	var ca []byte
	if p := sa.rootCA.Load(); p != nil {
		ca = *p
	}
	for _, obj := range generic.Items(list) {
		ns := obj.(*corev1.Namespace)
		if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
			continue
		}
		if err := r.publishRootCA(ctx, ns.Name, ca); err != nil {
			return err
		}
		if _, err := r.serviceAccounts.Get(ctx, ns.Name, core.DefaultServiceAccountName); !apierrors.IsNotFound(err) {
			continue
		}
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: core.DefaultServiceAccountName, Namespace: ns.Name}}
		if _, err := r.serviceAccounts.Create(ctx, ns.Name, sa, false); err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
			return err
		}
	}
	return nil
}

// publishRootCA keeps the namespace's orch-root-ca.crt configmap holding ca (none while it is not
// known), as Kubernetes' root CA publisher keeps kube-root-ca.crt.
func (r *registry) publishRootCA(ctx context.Context, namespace string, ca []byte) error {
	if ca == nil {
		return nil
	}
	want := map[string]string{"ca.crt": string(ca)}
	obj, err := r.configMaps.Get(ctx, namespace, core.RootCAConfigMap)
	switch {
	case apierrors.IsNotFound(err):
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: core.RootCAConfigMap, Namespace: namespace}, Data: want}
		if _, err := r.configMaps.Create(ctx, namespace, cm, false); err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
			return err
		}
		return nil
	case err != nil:
		return err
	}
	if maps.Equal(obj.(*corev1.ConfigMap).Data, want) {
		return nil
	}
	_, err = r.configMaps.GuaranteedUpdate(ctx, namespace, core.RootCAConfigMap, func(obj runtime.Object) (runtime.Object, error) {
		cm := obj.(*corev1.ConfigMap)
		cm.Data, cm.BinaryData = want, nil
		return cm, nil
	})
	return err
}
