// Package prober runs containers' startup, readiness and liveness probes and their lifecycle
// hooks, as Kubernetes' kubelet's prober and lifecycle handler runner do.
//
// A probe (exec, httpGet, tcpSocket or grpc) runs once per Probe call, bounded by its
// timeoutSeconds on the injected clock; its result is published once it came successThreshold (or
// failureThreshold) times in a row, as the kubelet's prober worker keeps it. Readiness starts
// failed, liveness passed and startup unknown; liveness and readiness wait for the startup probe;
// a published liveness or startup failure asks for the instance to be killed, and the probes hold
// until a new instance runs. The caller owns the scheduling: Probe says when the probe is due
// again and whether the pod must be synced.
//
// postStart and preStop hooks (exec, httpGet) run in a container within a limit on the clock; a
// sleep hook is not a call and is waited for on the caller's queue instead. httpGet probes and
// hooks send the User-Agent orch-probe/<version> and orch-lifecycle/<version> (Kubernetes'
// kube-probe and kube-lifecycle renamed).
package prober
