package server

import (
	"context"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

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

// rootCAPEM is the root CA SetRootCA set, nil while none is.
func (s *ServiceAccounts) rootCAPEM() []byte {
	if p := s.rootCA.Load(); p != nil {
		return *p
	}
	return nil
}

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
