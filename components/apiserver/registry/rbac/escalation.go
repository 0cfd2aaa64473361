package rbac

import (
	"context"
	"errors"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	rbacapi "orch.io/orch/components/apis/rbac/v1"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/authz/rbac"
)

// Guard keeps a user from granting what they do not hold, as Kubernetes' RBAC storage does: a
// role's rules, or the role a binding refers to, must be covered by the rules the user holds
// where the object lives, unless the user is in system:masters or the authorizer lets them
// escalate (roles) or bind (the role a binding names) explicitly.
type Guard struct {
	// Authorizer is the server's, asked for the escalate and bind verbs; nil allows neither.
	Authorizer authz.Authorizer
	// Roles are the server's roles and bindings, where the user's rules are read.
	Roles *rbac.Index
	// RoleStores, once set, are where the role a binding names is read, as Kubernetes' escalation
	// check reads it from storage: the index follows the stores' watches, and a role written a
	// moment before the binding may not be in it yet. Nil: the index alone.
	RoleStores *RoleStores
}

// RoleStores are the stores of the roles and cluster roles a binding may name.
type RoleStores struct {
	Roles, ClusterRoles RoleGetter
}

// RoleGetter reads one object from storage (generic.Store's Get).
type RoleGetter interface {
	Get(ctx context.Context, namespace, name string) (runtime.Object, error)
}

// fullAuthorityMessage is Kubernetes' refusal of an aggregation rule to a user who holds less than
// everything: it can gather any rule.
const fullAuthorityMessage = "must have cluster-admin privileges to use the aggregationRule"

func (g Guard) ConfirmWrite(ctx context.Context, user *authn.UserInfo, obj, old runtime.Object) error {
	if rbac.EscalationAllowed(user) || onlyGCFieldsChanged(obj, old) {
		return nil
	}
	switch o := obj.(type) {
	case *rbacv1.Role:
		if g.allowed(ctx, user, "escalate", "roles", o.Namespace, o.Name) {
			return nil
		}
		return g.confirm(user, o.Namespace, o.Rules, "roles", o.Name)
	case *rbacv1.ClusterRole:
		if g.allowed(ctx, user, "escalate", "clusterroles", "", o.Name) {
			return nil
		}
		if err := g.confirm(user, "", o.Rules, "clusterroles", o.Name); err != nil {
			return err
		}
		oldRole, _ := old.(*rbacv1.ClusterRole)
		if o.AggregationRule != nil || (oldRole != nil && oldRole.AggregationRule != nil) {
			if rbac.ConfirmNoEscalation(g.Roles, user, "", rbac.FullAuthority) != nil {
				return forbidden("clusterroles", o.Name, errors.New(fullAuthorityMessage))
			}
		}
		return nil
	case *rbacv1.RoleBinding:
		return g.confirmBinding(ctx, user, o.Namespace, o.RoleRef, "rolebindings", o.Name)
	case *rbacv1.ClusterRoleBinding:
		return g.confirmBinding(ctx, user, "", o.RoleRef, "clusterrolebindings", o.Name)
	}
	return nil
}

// confirmBinding lets a user bind a role they may bind, or whose rules they hold in namespace ("" for
// a cluster role binding). A binding to a missing role is refused with its NotFound.
func (g Guard) confirmBinding(ctx context.Context, user *authn.UserInfo, namespace string, ref rbacv1.RoleRef, resource, name string) error {
	roleResource := "roles"
	if ref.Kind == rbacapi.ClusterRoleKind {
		roleResource = "clusterroles"
	}
	if g.allowed(ctx, user, "bind", roleResource, namespace, ref.Name) {
		return nil
	}
	rules, err := g.roleRules(ctx, ref, namespace, roleResource)
	if err != nil {
		return err
	}
	return g.confirm(user, namespace, rules, resource, name)
}

// roleRules are the rules of the role ref names (of roleResource) in namespace ("" for a cluster
// role binding), their groups canonical; a missing role is its NotFound, a storage failure that
// failure.
func (g Guard) roleRules(ctx context.Context, ref rbacv1.RoleRef, namespace, roleResource string) ([]rbacv1.PolicyRule, error) {
	notFound := apierrors.NewNotFound(GroupVersion.WithResource(roleResource).GroupResource(), ref.Name)
	if g.RoleStores == nil {
		rules, err := g.Roles.RoleRules(ref, namespace)
		if err != nil {
			return nil, notFound
		}
		return rules, nil
	}
	var obj runtime.Object
	var err error
	switch ref.Kind {
	case rbacapi.RoleKind:
		obj, err = g.RoleStores.Roles.Get(ctx, namespace, ref.Name)
	case rbacapi.ClusterRoleKind:
		obj, err = g.RoleStores.ClusterRoles.Get(ctx, "", ref.Name)
	default:
		return nil, notFound
	}
	if apierrors.IsNotFound(err) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	switch o := obj.(type) {
	case *rbacv1.Role:
		return rbac.CanonicalRules(o.Rules), nil
	case *rbacv1.ClusterRole:
		return rbac.CanonicalRules(o.Rules), nil
	}
	return nil, notFound
}

func (g Guard) confirm(user *authn.UserInfo, namespace string, rules []rbacv1.PolicyRule, resource, name string) error {
	if err := rbac.ConfirmNoEscalation(g.Roles, user, namespace, rules); err != nil {
		return forbidden(resource, name, err)
	}
	return nil
}

// allowed asks the authorizer whether user may verb (escalate, bind) the role resource/name.
func (g Guard) allowed(ctx context.Context, user *authn.UserInfo, verb, resource, namespace, name string) bool {
	if g.Authorizer == nil {
		return false
	}
	d, _, _ := g.Authorizer.Authorize(ctx, authz.Attributes{
		User: user, Verb: verb, APIGroup: rbacapi.GroupName, APIVersion: "*", Resource: resource,
		Namespace: namespace, Name: name, ResourceRequest: true,
	})
	return d == authz.DecisionAllow
}

func forbidden(resource, name string, err error) error {
	return apierrors.NewForbidden(schema.GroupResource{Group: rbacapi.GroupName, Resource: resource}, name, err)
}

// onlyGCFieldsChanged is Kubernetes' IsOnlyMutatingGCFields: an update changing nothing but owner
// references and finalizers (what the garbage collector writes) grants nothing. The fields the
// server sets on every write (resourceVersion, managedFields) are not the update's.
func onlyGCFieldsChanged(obj, old runtime.Object) bool {
	if old == nil {
		return false
	}
	copied := old.DeepCopyObject()
	om, nm := copied.(metav1.Object), obj.(metav1.Object)
	om.SetOwnerReferences(nm.GetOwnerReferences())
	om.SetFinalizers(nm.GetFinalizers())
	om.SetManagedFields(nm.GetManagedFields())
	om.SetResourceVersion(nm.GetResourceVersion())
	return equality.Semantic.DeepEqual(copied, obj)
}
