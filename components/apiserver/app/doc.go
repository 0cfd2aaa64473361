// Package app runs orch-apiserver: its command-line options, and the wiring from options to a
// serving process (storage, authentication, authorization, TLS, HTTP server).
package app
