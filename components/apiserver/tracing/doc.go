// Package tracing exports orch-apiserver's spans with OpenTelemetry as a TracingConfiguration
// says, and traces storage calls as children of the request that made them.
package tracing
