// Package server assembles orch-apiserver's HTTP handler from the rooms beside it: the registry's
// stores and their subresources' REST served by endpoints, the admission chain, the request
// filters in Kubernetes' order, and the controllers started beside the request path. What it
// holds itself is the assembly: its configuration, the routes, discovery, the version, health and
// metrics endpoints, and the OpenAPI documents.
package server
