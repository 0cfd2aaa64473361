package apptest

import (
	"context"
	"net/http"
	"strings"

	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// TokenUsers authenticates each bearer token of users as its user, and a request without one as
// anonymous, for an API server the agent's stream tests reach pods through.
func TokenUsers(users map[string]authn.UserInfo) authn.Authenticator {
	return authn.Union(authn.AuthenticatorFunc(func(r *http.Request) (*authn.UserInfo, bool, error) {
		token, bearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if u, ok := users[token]; bearer && ok {
			return &u, true, nil
		}
		return nil, false, nil
	}), authn.Anonymous())
}

// OnlyGetPods allows everyone everything but user, who may only get pods, as an RBAC role
// granting only get pods would: its pods/exec is refused with Kubernetes' 403.
func OnlyGetPods(user string) authz.Authorizer {
	return authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		if a.User != nil && a.User.Name == user && !(a.Verb == "get" && a.Resource == "pods" && a.Subresource == "") {
			return authz.DecisionNoOpinion, "", nil
		}
		return authz.DecisionAllow, "", nil
	})
}
