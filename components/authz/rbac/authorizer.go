package rbac

import (
	"context"
	"errors"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// ModeRBAC is the name of this authorizer in --authorization-mode and the type of it in an
// AuthorizationConfiguration.
const ModeRBAC = "RBAC"

// Authorizer is the RBAC authorizer over x: a request one of the user's rules allows is allowed,
// with the binding that allowed it as the reason; any other is NoOpinion, so the next authorizer
// decides (RBAC never denies). Before x is synced it allows nothing and says so.
func Authorizer(x *Index) authz.Authorizer { return authorizer{x} }

type authorizer struct{ x *Index }

// notSynced is the reason given while the roles and bindings are still being loaded.
const notSynced = "RBAC: the roles and bindings are not loaded yet"

func (a authorizer) Authorize(_ context.Context, attrs authz.Attributes) (authz.Decision, string, error) {
	if !a.x.Synced() {
		return authz.DecisionNoOpinion, notSynced, nil
	}
	req := newRequest(attrs)
	var allowedBy Source
	allowed := false
	var errs []string
	a.x.visit(attrs.User, attrs.Namespace, func(src Source, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil && req.allowedBy(*rule) {
			allowed, allowedBy = true, src
			return false
		}
		if err != nil {
			errs = append(errs, err.Error())
		}
		return true
	})
	if allowed {
		return authz.DecisionAllow, "RBAC: allowed by " + allowedBy.String(), nil
	}
	if len(errs) > 0 {
		return authz.DecisionNoOpinion, "RBAC: " + aggregate(errs).Error(), nil
	}
	return authz.DecisionNoOpinion, "", nil
}

// RulesFor lists the user's rules as Kubernetes' RBAC authorizer does: a rule with resources is a
// resource rule, one with URLs a non-resource rule. RBAC lists everything it allows, so the list is
// complete; a binding whose role is missing is an error beside it.
func (a authorizer) RulesFor(_ context.Context, user *authn.UserInfo, namespace string) (authz.Rules, error) {
	var out authz.Rules
	if !a.x.Synced() {
		return authz.Rules{Incomplete: true}, errNotSynced
	}
	rules, err := a.x.PolicyRules(user, namespace)
	for _, r := range rules {
		if len(r.Resources) > 0 {
			out.Resource = append(out.Resource, authorizationv1.ResourceRule{
				Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames,
			})
		}
		if len(r.NonResourceURLs) > 0 {
			out.NonResource = append(out.NonResource, authorizationv1.NonResourceRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
		}
	}
	return out, err
}

var errNotSynced = errors.New(notSynced)
