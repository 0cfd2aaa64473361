// Package v1 names certificates.orch.io/v1 and its signers, Kubernetes' certificates.k8s.io/v1
// renamed: what the API server serves and signs, and what the node agent asks for.
package v1
