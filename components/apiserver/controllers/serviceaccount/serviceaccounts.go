package serviceaccount

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/controllers"
	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/periodic"
)

// SyncInterval is how often every namespace is looked at.
const SyncInterval = 2 * time.Second

// Controller keeps every active namespace's default service account and root CA configmap.
type Controller struct {
	Clock clock.Clock
	// Namespaces, ServiceAccounts and ConfigMaps are the server's stores.
	Namespaces, ServiceAccounts, ConfigMaps *generic.Store
	// RootCA returns the certificates (PEM) pods verify the server with, nil while unknown.
	RootCA func() []byte
	// Stopping closes when the server's shutdown begins: storage may close under a sync from
	// then on, and that failure is the shutdown's.
	Stopping <-chan struct{}
}

// Run syncs every namespace at once and then every SyncInterval, until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	_ = periodic.Every(ctx, c.Clock, SyncInterval, true, func(ctx context.Context) bool {
		if err := c.sync(ctx); controllers.Failed(ctx, c.Stopping, err) {
			klog.ErrorS(err, "Creating default service accounts")
		}
		return false
	})
}

func (c *Controller) sync(ctx context.Context) error {
	list, err := c.Namespaces.List(ctx, "", generic.ListOptions{})
	if err != nil {
		return err
	}
	ca := c.RootCA()
	for _, obj := range generic.Items(list) {
		ns := obj.(*corev1.Namespace)
		if ns.DeletionTimestamp != nil || ns.Status.Phase == corev1.NamespaceTerminating {
			continue
		}
		if err := c.publishRootCA(ctx, ns.Name, ca); err != nil {
			return err
		}
		if err := c.ensureDefault(ctx, ns.Name); err != nil {
			return err
		}
	}
	return nil
}

// ensureDefault creates the namespace's default service account when it is missing. A namespace
// that began terminating meanwhile refuses it (NamespaceLifecycle): it needs none.
func (c *Controller) ensureDefault(ctx context.Context, namespace string) error {
	if _, err := c.ServiceAccounts.Get(ctx, namespace, core.DefaultServiceAccountName); !apierrors.IsNotFound(err) {
		return nil
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: core.DefaultServiceAccountName, Namespace: namespace}}
	if _, err := c.ServiceAccounts.Create(ctx, namespace, sa, false); err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsForbidden(err) {
		return err
	}
	return nil
}
