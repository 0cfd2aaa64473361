// Package rbac holds rbac.authorization.orch.io/v1 roles, cluster roles, role bindings and cluster
// role bindings: their strategies, Kubernetes' validation of them, and the escalation checks that
// keep a user from granting, through a role or a binding, what they do not hold themselves.
package rbac
