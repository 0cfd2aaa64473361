package namespace

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/controllers"
	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/periodic"
)

// SweepInterval is how often terminating namespaces are emptied and finished, and missing initial
// namespaces tried again.
const SweepInterval = 2 * time.Second

// Controller finishes the deletion of namespaces.
type Controller struct {
	Clock clock.Clock
	// Namespaces is the namespaces' store.
	Namespaces *generic.Store
	// Contents are the stores of what a namespace holds, emptied in this order.
	Contents []*generic.Store
	// Stopping closes when the server's shutdown begins: storage may close under a sweep from
	// then on, and that failure is the shutdown's, not worth an error line.
	Stopping <-chan struct{}
}

// EnsureInitial creates the namespaces that exist from the start, where missing.
func EnsureInitial(ctx context.Context, namespaces *generic.Store) error {
	for _, name := range core.InitialNamespaces {
		_, err := namespaces.Create(ctx, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, false)
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}

// RetryInitial tries EnsureInitial every SweepInterval on clk until it succeeds or ctx ends.
func RetryInitial(ctx context.Context, clk clock.Clock, namespaces *generic.Store) {
	_ = periodic.Every(ctx, clk, SweepInterval, false, func(ctx context.Context) bool {
		return EnsureInitial(ctx, namespaces) == nil
	})
}

// Run empties each terminating namespace every SweepInterval (pods gracefully: a pod on a node
// goes when its agent confirms) and removes it once nothing is left, until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	finalize := c.Namespaces.WithUpdates("finalize", core.NamespaceFinalizeStrategy{}).WithoutAdmission()
	_ = periodic.Every(ctx, c.Clock, SweepInterval, false, func(ctx context.Context) bool {
		if err := c.sweep(ctx, finalize); controllers.Failed(ctx, c.Stopping, err) {
			klog.ErrorS(err, "Finishing terminating namespaces")
		}
		return false
	})
}

func (c *Controller) sweep(ctx context.Context, finalize *generic.Store) error {
	list, err := c.Namespaces.List(ctx, "", generic.ListOptions{})
	if err != nil {
		return err
	}
	for _, obj := range generic.Items(list) {
		ns := obj.(*corev1.Namespace)
		if ns.DeletionTimestamp == nil {
			continue
		}
		empty, err := c.empty(ctx, ns.Name)
		if err != nil || !empty {
			return err
		}
		_, err = finalize.GuaranteedUpdate(ctx, "", ns.Name, func(obj runtime.Object) (runtime.Object, error) {
			n := obj.(*corev1.Namespace)
			n.Spec.Finalizers = slices.DeleteFunc(n.Spec.Finalizers, func(f corev1.FinalizerName) bool { return f == core.FinalizerOrch })
			return n, nil
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// empty deletes what namespace holds and tells whether nothing is left.
func (c *Controller) empty(ctx context.Context, namespace string) (bool, error) {
	empty := true
	for _, s := range c.Contents {
		list, err := s.DeleteCollection(ctx, namespace, generic.ListOptions{}, generic.DeleteOptions{})
		if err != nil {
			return false, err
		}
		for _, obj := range generic.Items(list) {
			if m, ok := obj.(metav1.Object); ok && m.GetDeletionTimestamp() != nil && m.GetDeletionGracePeriodSeconds() != nil && *m.GetDeletionGracePeriodSeconds() > 0 {
				empty = false // still stopping on its node
			}
		}
	}
	return empty, nil
}
