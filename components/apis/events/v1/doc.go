// Package v1 holds the wire types of the events.orch.io/v1 API group: the Event resource and its list,
// with Kubernetes-compatible JSON so generic clients read them unchanged.
package v1
