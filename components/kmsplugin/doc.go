// Package kmsplugin is orch's reference KMS v2 plugin: it wraps the API server's data keys with
// AES-GCM under keys read from a local file, served over the k8s.io/kms v2 gRPC API.
package kmsplugin
