// Package core holds the core v1 resources the server keeps (namespaces, nodes, pods, configmaps,
// secrets, service accounts): their strategies, with Kubernetes' defaults, validation, field
// selectors and table columns, and the REST of their subresources (pods/binding, pods/eviction,
// namespaces/finalize, serviceaccounts/token).
package core
