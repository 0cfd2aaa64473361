// Package core holds the strategies of the core v1 resources an agent needs: namespaces, nodes
// and pods, with Kubernetes' defaults, validation, field selectors and table columns.
package core
