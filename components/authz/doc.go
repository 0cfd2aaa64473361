// Package authz decides whether an authenticated request may proceed: the Authorizer interface,
// the --authorization-mode authorizers, and the text of Kubernetes' 403 Forbidden message.
package authz
