// Package namespace is the server's namespace controller, as Kubernetes' namespace controller and
// bootstrap hook: the namespaces that exist from the start are made, and a terminating namespace
// is emptied and removed once nothing is left in it.
package namespace
