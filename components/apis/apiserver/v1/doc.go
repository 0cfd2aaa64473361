// Package v1 holds the file formats of the apiserver.config.orch.io/v1 group: the tracing, admission,
// authentication, authorization and encryption-at-rest configuration kinds the API server reads,
// with Kubernetes-compatible JSON names.
package v1
