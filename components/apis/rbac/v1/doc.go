// Package v1 names rbac.authorization.orch.io/v1, Kubernetes' rbac.authorization.k8s.io/v1
// renamed: Role, ClusterRole, RoleBinding and ClusterRoleBinding, whose wire types are Kubernetes'
// own (k8s.io/api/rbac/v1), and the labels and annotations of the bootstrap policy.
package v1
