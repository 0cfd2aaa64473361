// Package bootstrappolicy is the RBAC policy orch-apiserver reconciles at start: Kubernetes' default
// cluster roles and cluster role bindings (cluster-admin, admin, edit, view, the discovery,
// basic-user, public-info and monitoring roles, the node and node bootstrapper roles, the
// certificate approval roles, and the roles of the controllers the server runs), named as
// Kubernetes names them with orch in place of the product and its groups.
package bootstrappolicy
