// Package rbac holds the RBAC controllers orch-apiserver runs: Indexer keeps the RBAC authorizer's
// roles and bindings in step with the stores, Aggregator is Kubernetes' clusterrole aggregation
// controller (a cluster role with an aggregation rule gathers the rules of those its selectors
// match), and EnsurePolicy reconciles the bootstrap policy at start.
package rbac
