// Package endpoints serves the events.orch.io/v1 REST operations over HTTP with go-restful, speaking
// Kubernetes' wire conventions: Status errors, content negotiation, dryRun, field validation, patch
// types, paging and watch streams.
package endpoints
