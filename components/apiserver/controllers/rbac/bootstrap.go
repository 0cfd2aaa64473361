package rbac

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/benbjohnson/clock"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/component-helpers/auth/rbac/validation"

	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/authz/rbac/bootstrappolicy"
	"orch.io/orch/components/periodic"
)

// PolicyRetryInterval is how often EnsurePolicy is tried again until it succeeds.
const PolicyRetryInterval = time.Second

// EnsurePolicy reconciles the bootstrap policy as kube-apiserver's RBAC post-start hook does: a
// missing cluster role or binding is made; one that exists keeps what was added to it and gets
// back what the policy has and it lacks (rules, aggregation selectors, subjects, labels and
// annotations), unless its rbac.authorization.kubernetes.io/autoupdate annotation is "false"; a
// binding whose role reference differs is made again.
func EnsurePolicy(ctx context.Context, clusterRoles, clusterRoleBindings *generic.Store) error {
	for _, want := range bootstrappolicy.ClusterRoles() {
		if err := reconcileRole(ctx, clusterRoles, &want); err != nil {
			return fmt.Errorf("reconciling clusterrole %s: %w", want.Name, err)
		}
	}
	for _, want := range bootstrappolicy.ClusterRoleBindings() {
		if err := reconcileBinding(ctx, clusterRoleBindings, &want); err != nil {
			return fmt.Errorf("reconciling clusterrolebinding %s: %w", want.Name, err)
		}
	}
	return nil
}

// RetryPolicy tries EnsurePolicy every PolicyRetryInterval on clk until it succeeds or ctx ends.
func RetryPolicy(ctx context.Context, clk clock.Clock, clusterRoles, clusterRoleBindings *generic.Store) {
	_ = periodic.Every(ctx, clk, PolicyRetryInterval, false, func(ctx context.Context) bool {
		return EnsurePolicy(ctx, clusterRoles, clusterRoleBindings) == nil
	})
}

func reconcileRole(ctx context.Context, store *generic.Store, want *rbacv1.ClusterRole) error {
	obj, err := storedOrMade(ctx, store, want.Name, want)
	if err != nil || obj == nil {
		return err
	}
	have := obj.(*rbacv1.ClusterRole)
	if !autoUpdate(&have.ObjectMeta) {
		return nil
	}
	next := have.DeepCopy()
	mergeMeta(&next.ObjectMeta, &want.ObjectMeta)
	if want.AggregationRule != nil {
		// An aggregated role's rules are the aggregation controller's; its selectors are reconciled.
		if next.AggregationRule == nil {
			next.AggregationRule = &rbacv1.AggregationRule{}
		}
		for _, s := range want.AggregationRule.ClusterRoleSelectors {
			if !slices.ContainsFunc(next.AggregationRule.ClusterRoleSelectors, func(h metav1.LabelSelector) bool { return equality.Semantic.DeepEqual(h, s) }) {
				next.AggregationRule.ClusterRoleSelectors = append(next.AggregationRule.ClusterRoleSelectors, s)
			}
		}
	} else if covered, missing := validation.Covers(have.Rules, want.Rules); !covered {
		next.Rules = append(next.Rules, missing...)
	}
	if equality.Semantic.DeepEqual(next, have) {
		return nil
	}
	_, _, err = store.Update(ctx, "", next.Name, next, false)
	return err
}

func reconcileBinding(ctx context.Context, store *generic.Store, want *rbacv1.ClusterRoleBinding) error {
	obj, err := storedOrMade(ctx, store, want.Name, want)
	if err != nil || obj == nil {
		return err
	}
	have := obj.(*rbacv1.ClusterRoleBinding)
	if !autoUpdate(&have.ObjectMeta) {
		return nil
	}
	if have.RoleRef != want.RoleRef {
		// A role reference cannot change: the binding is made again.
		if _, _, err := store.Delete(ctx, "", have.Name, generic.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		_, err = store.Create(ctx, "", want, false)
		return err
	}
	next := have.DeepCopy()
	mergeMeta(&next.ObjectMeta, &want.ObjectMeta)
	for _, s := range want.Subjects {
		if !slices.Contains(next.Subjects, s) {
			next.Subjects = append(next.Subjects, s)
		}
	}
	if equality.Semantic.DeepEqual(next, have) {
		return nil
	}
	_, _, err = store.Update(ctx, "", next.Name, next, false)
	return err
}

// storedOrMade returns the stored object of name, or makes want and returns nil.
func storedOrMade(ctx context.Context, store *generic.Store, name string, want runtime.Object) (runtime.Object, error) {
	obj, err := store.Get(ctx, "", name)
	if apierrors.IsNotFound(err) {
		_, err = store.Create(ctx, "", want, false)
		return nil, err
	}
	return obj, err
}

// autoUpdate tells whether the server may change an object of the policy: not when an
// administrator set its autoupdate annotation to "false".
func autoUpdate(m *metav1.ObjectMeta) bool {
	return m.Annotations[rbacv1.AutoUpdateAnnotationKey] != "false"
}

// mergeMeta adds want's labels and annotations to m, keeping m's own.
func mergeMeta(m, want *metav1.ObjectMeta) {
	if len(want.Labels) > 0 && m.Labels == nil {
		m.Labels = map[string]string{}
	}
	if len(want.Annotations) > 0 && m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	for k, v := range want.Labels {
		if _, ok := m.Labels[k]; !ok {
			m.Labels[k] = v
		}
	}
	for k, v := range want.Annotations {
		if _, ok := m.Annotations[k]; !ok {
			m.Annotations[k] = v
		}
	}
}
