package authz

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"

	"orch.io/orch/components/authn"
)

// Attributes describe the request being authorized, as Kubernetes' authorizer.Attributes.
type Attributes struct {
	// User is the authenticated user; nil is treated as the empty user name.
	User *authn.UserInfo
	// Verb is the API verb (get, list, watch, create, update, patch, delete, deletecollection) for a
	// resource request, or the lower-case HTTP method for a non-resource request.
	Verb string
	// Namespace is empty for cluster-scoped requests.
	Namespace  string
	APIGroup   string // "" for the core group
	APIVersion string
	Resource   string
	// Subresource, such as "status" or "log"; empty for the resource itself.
	Subresource string
	// Name of the object; empty for collection requests (list, watch, create, deletecollection).
	Name string
	// Path is the URL path; used for non-resource requests.
	Path string
	// ResourceRequest is true for requests to API resources, false for non-resource URLs such as
	// /healthz or /version.
	ResourceRequest bool
}

// Decision is an authorizer's answer.
type Decision int

const (
	// DecisionDeny rejects the request; no later authorizer is asked.
	DecisionDeny Decision = iota
	// DecisionAllow admits the request; no later authorizer is asked.
	DecisionAllow
	// DecisionNoOpinion leaves the request to the next authorizer; a request that no authorizer
	// allows is forbidden.
	DecisionNoOpinion
)

// String returns "Deny", "Allow" or "NoOpinion".
func (d Decision) String() string {
	switch d {
	case DecisionDeny:
		return "Deny"
	case DecisionAllow:
		return "Allow"
	case DecisionNoOpinion:
		return "NoOpinion"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// Authorizer decides on a request. The reason, possibly empty, explains the decision; the server
// appends it to the 403 message (see ForbiddenMessage). A non-nil error means the authorizer could
// not decide; the decision returned with it still applies (Kubernetes authorizers answer NoOpinion
// or Deny with their error).
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (decision Decision, reason string, err error)
}

// AuthorizerFunc adapts a function to the Authorizer interface.
type AuthorizerFunc func(ctx context.Context, a Attributes) (Decision, string, error)

// Authorize calls f(ctx, a).
func (f AuthorizerFunc) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	return f(ctx, a)
}

// AlwaysAllowReason and AlwaysDenyReason are the reasons the AlwaysAllow and AlwaysDeny authorizers
// give (Kubernetes' texts).
const (
	AlwaysAllowReason = ""
	AlwaysDenyReason  = "Everything is forbidden."
)

// AlwaysAllow returns the authorizer of mode AlwaysAllow: every request is allowed, and its rules
// say so (everything, on every resource and path).
func AlwaysAllow() Authorizer { return alwaysAllow{} }

type alwaysAllow struct{}

func (alwaysAllow) Authorize(context.Context, Attributes) (Decision, string, error) {
	return DecisionAllow, AlwaysAllowReason, nil
}

func (alwaysAllow) RulesFor(context.Context, *authn.UserInfo, string) (Rules, error) {
	return Rules{
		Resource:    []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
		NonResource: []authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
	}, nil
}

// AlwaysDeny returns the authorizer of mode AlwaysDeny: every request is denied with the reason
// "Everything is forbidden.", and it lists no rules. (Kubernetes' AlwaysDeny answers NoOpinion,
// which forbids the request unless a later authorizer allows it; this one answers Deny, which no
// later authorizer overrides.)
func AlwaysDeny() Authorizer { return alwaysDeny{} }

type alwaysDeny struct{}

func (alwaysDeny) Authorize(context.Context, Attributes) (Decision, string, error) {
	return DecisionDeny, AlwaysDenyReason, nil
}

func (alwaysDeny) RulesFor(context.Context, *authn.UserInfo, string) (Rules, error) {
	return Rules{}, nil
}
