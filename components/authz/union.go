package authz

import (
	"context"
	"errors"
	"strings"
)

// Union returns an authorizer that asks authorizers in order, as Kubernetes' authorization chain:
// the first Allow or Deny decides, with that authorizer's reason. When every authorizer has no
// opinion, the union has none either; its reason is the authorizers' non-empty reasons joined by
// newlines and its error their errors joined. Nil entries are ignored.
func Union(authorizers ...Authorizer) Authorizer {
	list := make([]Authorizer, 0, len(authorizers))
	for _, a := range authorizers {
		if a != nil {
			list = append(list, a)
		}
	}
	return union(list)
}

type union []Authorizer

func (u union) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	var reasons []string
	var errs []error
	for _, authorizer := range u {
		decision, reason, err := authorizer.Authorize(ctx, a)
		if err != nil {
			errs = append(errs, err)
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
		switch decision {
		case DecisionAllow, DecisionDeny:
			return decision, reason, err
		}
	}
	return DecisionNoOpinion, strings.Join(reasons, "\n"), errors.Join(errs...)
}
