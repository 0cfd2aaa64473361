// Package kmsv2 is Kubernetes' KMS v2 envelope encryption: data keys generated locally, wrapped
// by a plugin over the k8s.io/kms v2 gRPC API, cached, and replaced when the plugin's key ID changes.
package kmsv2
