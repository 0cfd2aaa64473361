package server

import (
	"context"
	"maps"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/authn/serviceaccount"
)

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
		t := core.TokenREST{
			Issuer: sa.Issuer, Audiences: sa.Audiences, MaxExpiration: sa.MaxExpiration, Clock: c.Clock,
			ServiceAccounts: store, Pods: r.pods, Nodes: r.nodes, Admission: r.admission,
		}
		res.Subresources = []endpoints.Subresource{t.Subresource()}
	}
	for i := range r.groups {
		if r.groups[i].GroupVersion == core.GroupVersion {
			r.groups[i].Resources = append(r.groups[i].Resources, res)
		}
	}
	return nil
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
