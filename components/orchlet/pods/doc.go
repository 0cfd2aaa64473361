// Package pods runs the node agent's pods: it admits the desired pods the sources deliver, and for
// each admitted pod pulls its images, runs its sandbox and containers through the CRI, restarts
// them with crash-loop back-off, probes them, tears down pods that left the sources and reports
// pod status.
//
// A pod's lifecycle is Kubernetes' kubelet's (computePodActions, the prober, the status
// generator): init containers run one at a time to success before the regular containers, and
// sidecars (init containers with restartPolicy Always) start in order, each once the one before
// has started, and keep running; restartPolicy Never, OnFailure and Always decide restarts and
// the phase, a pod whose containers are done for good (or past activeDeadlineSeconds) being
// terminal and stopped. Startup, readiness and liveness probes (exec, httpGet, tcpSocket, grpc)
// run on the clock with their thresholds; the startup probe gates the other two; the pod's
// conditions and each container's ready and started follow them. postStart and preStop hooks
// (exec, httpGet, sleep) run around a container's start and stop; StopContainer gets the grace
// period left after the preStop hook, at least 2 seconds; regular containers stop before sidecars,
// sidecars in reverse order. A sleep hook waits on the queue, not in a call, so Step never blocks
// on the clock outside the runtime.
//
// Determinism comes first. All work goes through one queue of items ordered by due time, then pod
// namespace/name, then container name; Step does the items due now, one at a time, and every CRI
// call but a background pull is made synchronously from Step, so no outcome depends on goroutine
// scheduling. With serializeImagePulls false a pull runs in its own goroutine; its result is
// handed over only at the start of a Step (and the pod's sync queued then), never in the middle
// of one, and a pod's other containers wait for it, as Kubernetes' pod workers start a pod's
// containers one after the other. Time is read
// from the injected clock only; every CRI request other than pull and exec is bounded by
// --runtime-request-timeout as a deadline on that clock (StopContainer by that plus the grace
// period, as Kubernetes' CRI client allows), and exec probes by their timeoutSeconds. A request cut
// off at its deadline is recorded (event and log) and the pod's sync retried with back-off.
// Exits are noticed by a relist of the runtime every second (Options.RelistPeriod), as
// Kubernetes' generic PLEG does, and at once after a sync that started containers.
//
// A simulator drives it like the sources and events packages: Update hands it the sources'
// updates; Step does the due work; NextDeadline says when more is due; Idle says nothing is due
// now (a background pull that ended makes it busy). A CRI call can wait on the clock (a pull that
// takes 30s, a call the runtime holds until its deadline), which blocks Step, or a background
// pull, until the clock moves. The simulator therefore calls Step in a goroutine and waits until
// Step has returned or every call Calls reports (Step's and background pulls) is parked in the
// runtime: fakecri's InFlight equals Calls().InFlight and fakecri is Idle, with the same Calls
// Gen read before and after, so the calls there are these. It then moves the clock to the earlier
// of Step's call deadline and the runtime's NextWakeup, never past the deadline. While Step runs,
// only Calls, CallsChanged, Pods, PodsVersion and Update may be called. A fault scripted on
// PullImage that counts calls or draws a probability applies to whichever background pull
// reaches the runtime first, which the scheduler decides: script per-image pull failures instead.
//
// The runtime's deadlines are on the injected clock, which gRPC would misread as wall-clock times,
// so the deadline is kept out of the context handed to the CRI client and enforced by cancellation.
//
// Objects the agent creates carry the labels io.orch.pod.name, io.orch.pod.namespace,
// io.orch.pod.uid and, on containers, io.orch.container.name (Kubernetes' io.kubernetes.* keys
// renamed); sandboxes and containers without io.orch.pod.uid are never touched.
package pods
