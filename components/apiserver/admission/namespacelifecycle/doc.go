// Package namespacelifecycle is Kubernetes' NamespaceLifecycle admission plugin: nothing is created
// in a namespace that does not exist or is being deleted.
package namespacelifecycle
