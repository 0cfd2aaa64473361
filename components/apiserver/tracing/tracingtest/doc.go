// Package tracingtest is an in-process OpenTelemetry collector for tests: the OTLP gRPC trace
// service on a real listener, keeping every span it receives.
package tracingtest
