// Package server serves the node agent's network surfaces, as the kubelet does: the HTTPS server
// (--address, --port, --enable-server) with client-certificate, token-webhook and anonymous
// authentication and AlwaysAllow or SubjectAccessReview-webhook authorization; the read-only
// server (--read-only-port) without either; and the health server (--healthz-bind-address,
// --healthz-port).
//
// Paths: /healthz, /pods (a v1 PodList), /metrics (Prometheus), /stats/summary (the
// stats/v1alpha1 Summary shape), /configz ({"orchletconfig": ...}, HTTPS server only) and, with
// --enable-debugging-handlers, /containerLogs/{namespace}/{pod}/{container} and
// /exec/{namespace}/{pod}/{container}?command=... on the HTTPS server. Without that option the
// debugging paths answer 405 "Debug endpoints are disabled.", as the kubelet answers.
//
// The data comes from small interfaces (Deps) the pod workers implement. Every connection lives
// at most four hours and is closed after --streaming-connection-idle-timeout without a request;
// both limits run on the injected clock.
package server
