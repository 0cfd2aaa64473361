package authz

import (
	"context"
	"errors"

	authorizationv1 "k8s.io/api/authorization/v1"

	"orch.io/orch/components/authn"
)

// Rules are what a user may do in one namespace, as a SelfSubjectRulesReview lists them.
type Rules struct {
	Resource    []authorizationv1.ResourceRule
	NonResource []authorizationv1.NonResourceRule
	// Incomplete is true when an authorizer asked cannot list what it allows (a webhook): the user
	// may be allowed more than the rules say.
	Incomplete bool
}

// RuleResolver is an authorizer that can list the rules it allows a user, as Kubernetes'
// authorizer.RuleResolver.
type RuleResolver interface {
	// RulesFor lists what user may do in namespace ("" for the cluster scope). An error says some
	// rules could not be read; the rules returned with it still hold.
	RulesFor(ctx context.Context, user *authn.UserInfo, namespace string) (Rules, error)
}

// RulesFor asks a for user's rules in namespace: a's own list when it is a RuleResolver, and
// otherwise none, marked incomplete.
func RulesFor(ctx context.Context, a Authorizer, user *authn.UserInfo, namespace string) (Rules, error) {
	if r, ok := a.(RuleResolver); ok {
		return r.RulesFor(ctx, user, namespace)
	}
	return Rules{Incomplete: true}, errNoRules
}

var errNoRules = errors.New("authorizer does not support user rule resolution")

// RulesFor lists every authorizer's rules, in order: as Kubernetes' union, incomplete when one of
// them is, with their errors joined.
func (u union) RulesFor(ctx context.Context, user *authn.UserInfo, namespace string) (Rules, error) {
	var all Rules
	var errs []error
	for _, a := range u {
		r, err := RulesFor(ctx, a, user, namespace)
		all.Resource = append(all.Resource, r.Resource...)
		all.NonResource = append(all.NonResource, r.NonResource...)
		all.Incomplete = all.Incomplete || r.Incomplete
		if err != nil {
			errs = append(errs, err)
		}
	}
	return all, errors.Join(errs...)
}
