// Package controllers holds what orch-apiserver's controllers share. Its subpackages are the
// controllers the server runs beside its request path, as kube-controller-manager's run beside
// Kubernetes' API server: namespace (the initial namespaces and the deletion of terminating ones),
// serviceaccount (default service accounts and the root CA configmaps) and certificates (the
// approver and signer of certificate signing requests). Each reads and writes the server's stores
// directly, as the server, on the injected clock.
package controllers
