// Package authz decides whether an authenticated request may proceed: the Authorizer interface,
// the built-in authorizers (AlwaysAllow, AlwaysDeny), a SubjectAccessReview webhook as Kubernetes'
// structured authorization runs it (kubeconfig connection, cached answers, failure policy, match
// conditions), Kubernetes' authorization metrics, and the text of its 403 Forbidden message.
package authz
