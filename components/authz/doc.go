// Package authz decides whether an authenticated request may proceed: the Authorizer interface,
// the --authorization-mode authorizers (AlwaysAllow, AlwaysDeny, Node for the node agents, and a
// SubjectAccessReview webhook with cached answers), and the text of Kubernetes' 403 Forbidden
// message.
package authz
