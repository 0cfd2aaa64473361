// Package server assembles orch-apiserver's HTTP handler: authentication and authorization filters,
// request metrics, discovery, version and health endpoints, and the events.orch.io/v1 REST routes.
package server
