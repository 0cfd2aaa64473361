// Package authz decides whether an authenticated request may proceed: the Authorizer interface,
// the built-in authorizers (AlwaysAllow, AlwaysDeny, and Node for the node agents with its
// NodeRestriction rules), a SubjectAccessReview webhook as Kubernetes' structured authorization
// runs it (kubeconfig connection, cached answers, failure policy, match conditions), Kubernetes'
// authorization metrics, and the text of its 403 Forbidden message.
package authz
