package orchlet

import (
	"slices"
	"strings"
)

// labelNamespaces may be used freely in the labels of a node's own Node.
var labelNamespaces = []string{"orchlet.orch.io", "node.orch.io"}

// labels are the other orch.io labels a node may set on its own Node.
var labels = []string{
	"beta.orch.io/arch", "beta.orch.io/instance-type", "beta.orch.io/os",
	"failure-domain.beta.orch.io/region", "failure-domain.beta.orch.io/zone",
	"orch.io/arch", "orch.io/hostname", "orch.io/os", "node.orch.io/instance-type",
	"topology.orch.io/region", "topology.orch.io/zone",
}

// LabelNamespaces returns the orch.io label namespaces an agent may use freely on its Node.
func LabelNamespaces() []string { return slices.Clone(labelNamespaces) }

// Labels returns the other orch.io labels an agent may set on its Node.
func Labels() []string { return slices.Clone(labels) }

// IsOrchLabel tells whether key is in the orch.io namespace or a subdomain of it.
func IsOrchLabel(key string) bool {
	ns, _, found := strings.Cut(key, "/")
	return found && inNamespace(ns, "orch.io")
}

// IsOrchletLabel tells whether an agent may set the orch.io label key on its own Node, as
// Kubernetes' IsKubeletLabel does: one of Labels, or in one of LabelNamespaces.
func IsOrchletLabel(key string) bool {
	if slices.Contains(labels, key) {
		return true
	}
	ns, _, _ := strings.Cut(key, "/")
	return slices.ContainsFunc(labelNamespaces, func(a string) bool { return inNamespace(ns, a) })
}

// inNamespace reports whether ns is domain or a subdomain of it.
func inNamespace(ns, domain string) bool { return ns == domain || strings.HasSuffix(ns, "."+domain) }
