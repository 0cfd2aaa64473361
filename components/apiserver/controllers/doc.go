// Package controllers holds no code: its subpackages are the controllers orch-apiserver runs
// beside its request path, as kube-controller-manager's would run beside Kubernetes' API server:
// namespace (the initial namespaces and the deletion of terminating ones), serviceaccount (default
// service accounts and the root CA configmaps) and certificates (the approver and signer of
// certificate signing requests). Each reads and writes the server's stores directly, as the server,
// on the injected clock.
package controllers
