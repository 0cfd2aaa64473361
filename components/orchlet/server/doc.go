// Package server serves the node agent's network surfaces, as the kubelet does: the HTTPS server
// (--address, --port, --enable-server) with client-certificate, token-webhook and anonymous
// authentication and AlwaysAllow or SubjectAccessReview-webhook authorization; the read-only
// server (--read-only-port) without either; and the health server (--healthz-bind-address,
// --healthz-port).
//
// Paths: /healthz, /pods (a v1 PodList), /metrics (Prometheus), /stats/summary (the
// stats/v1alpha1 Summary shape), /configz ({"orchletconfig": ...}, HTTPS server only) and, with
// --enable-debugging-handlers, on the HTTPS server: /containerLogs/{namespace}/{pod}/{container}
// (the PodLogOptions query), /exec, /attach and /portForward (upgraded connections proxied to the
// runtime's streaming URL from the CRI's Exec, Attach and PortForward, as the kubelet does) and
// /run (a command's output in one body). Without that option the debugging paths answer 405
// "Debug endpoints are disabled.", as the kubelet answers.
//
// The data comes from small interfaces (Deps) the agent implements. Every connection lives at
// most four hours and is closed after --streaming-connection-idle-timeout without a request, or,
// once upgraded to a stream, without a byte either way; the limits run on the injected clock.
package server
