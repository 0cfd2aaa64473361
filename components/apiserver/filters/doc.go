// Package filters holds orch-apiserver's request filters, one a file as Kubernetes' generic API
// server keeps them: authentication, authorization, the in-flight and timeout limits, tracing,
// request metrics, panic recovery and the admission of a request by its path. Each wraps an
// http.Handler; the server chains them in Kubernetes' order.
package filters
