package rbac

import (
	"context"
	"maps"
	"slices"

	"github.com/benbjohnson/clock"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/controllers"
	"orch.io/orch/components/apiserver/registry/generic"
	"orch.io/orch/components/authz/rbac"
)

// Aggregator is Kubernetes' clusterrole aggregation controller: each cluster role with an
// aggregation rule has as its rules those of the cluster roles its selectors match, rewritten
// whenever a cluster role changes.
type Aggregator struct {
	Clock        clock.Clock
	ClusterRoles *generic.Store
	Stopping     <-chan struct{}
}

// Run keeps every aggregated cluster role's rules until ctx ends.
func (a *Aggregator) Run(ctx context.Context) {
	follow(ctx, a.Clock, a.Stopping, a.ClusterRoles, &aggregationFollower{ctx: ctx, a: a, roles: map[string]*rbacv1.ClusterRole{}})
}

// aggregationFollower holds the cluster roles and, after each change, writes the aggregated ones
// whose rules differ from what they gather.
type aggregationFollower struct {
	ctx   context.Context
	a     *Aggregator
	roles map[string]*rbacv1.ClusterRole
}

func (f *aggregationFollower) replace(objs []runtime.Object) {
	clear(f.roles)
	for _, obj := range objs {
		r := obj.(*rbacv1.ClusterRole)
		f.roles[r.Name] = r
	}
	f.sync()
}

func (f *aggregationFollower) apply(t watch.EventType, obj runtime.Object) {
	r := obj.(*rbacv1.ClusterRole)
	if t == watch.Deleted {
		delete(f.roles, r.Name)
	} else {
		f.roles[r.Name] = r
	}
	f.sync()
}

func (f *aggregationFollower) sync() {
	all := slices.Collect(maps.Values(f.roles))
	for _, role := range all {
		rules, aggregated, err := rbac.Aggregate(role, all)
		if !aggregated || err != nil || equality.Semantic.DeepEqual(rules, role.Rules) {
			continue
		}
		next := role.DeepCopy()
		next.Rules = rules
		// The resourceVersion is a precondition: a conflict means a newer role is on its way here.
		updated, _, err := f.a.ClusterRoles.Update(f.ctx, "", next.Name, next, false)
		switch {
		case err == nil:
			f.roles[next.Name] = updated.(*rbacv1.ClusterRole)
		case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		case controllers.Failed(f.ctx, f.a.Stopping, err):
			klog.ErrorS(err, "Aggregating cluster role rules", "clusterrole", role.Name)
		}
	}
}
