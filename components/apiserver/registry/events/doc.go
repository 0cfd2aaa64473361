// Package events stores events.orch.io/v1 Events: the create, read, update, patch, delete, list and
// watch semantics of Kubernetes' generic registry, on a storage.Interface and an injected clock.
package events
