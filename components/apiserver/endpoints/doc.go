// Package endpoints serves the resources of the generic registry over HTTP with go-restful,
// speaking Kubernetes' wire conventions: Status errors, content negotiation (JSON, YAML, tables and
// protobuf, a resource's own or the form its strategy names), dryRun, field validation, patch
// types, paging and watch streams. Nothing in it knows a particular resource.
package endpoints
