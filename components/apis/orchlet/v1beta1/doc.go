// Package v1beta1 holds the node agent's configuration file type, OrchletConfiguration in group-version
// orchlet.config.orch.io/v1beta1: one field per option SPEC.md marks as settable through `--config`,
// named as Kubernetes' KubeletConfiguration names it, with SPEC.md's defaults.
package v1beta1
