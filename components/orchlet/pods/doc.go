// Package pods is the node agent's pod workers: it admits the desired pods the sources deliver
// (capacity, sysctls, what this agent supports, the eviction manager's say), has each admitted
// pod's work done through one queue, and publishes the pods' statuses. The work itself is the pod
// runtime's other packages': podsync makes the runtime match a pod (its decisions in a pure core,
// as Kubernetes' computePodActions), prober runs probes and hooks, images pulls, volumes sets up
// volumes, status makes and holds the statuses, relist notices what changed in the runtime, qos and
// security say what the runtime is told of resources and privileges, dns the sandbox's resolver.
//
// Determinism comes first. All work goes through one queue of items ordered by due time, then pod
// namespace/name, then container name: each pod's syncs and probes, the relist of the runtime
// every second (Options.RelistPeriod), as Kubernetes' generic PLEG, and at once after a sync that
// started containers, the resync of every pod each syncFrequency, and on a host whose pod cgroups
// the agent makes, the housekeeping every 2 s that removes orphaned ones. Step does the items due now,
// one at a time, and every CRI call but a background pull is made synchronously from Step, so no
// outcome depends on goroutine scheduling; a background pull's result is handed over only at the
// start of a Step. Time is read from the injected clock only; every runtime request is bounded on
// it (package calls). A sync the runtime failed (a request cut off at its deadline among them) is
// recorded as a FailedSync event and retried with back-off. With Options.Workers above 1, Step
// syncs that many pods at once, each pod's items still in order, as the kubelet's pod workers do
// on a real node.
//
// A simulator drives it like the sources and events packages: Update hands it the sources'
// updates; Step does the due work; NextDeadline says when more is due; Idle says nothing is due
// now (a background pull that ended makes it busy). A call in Step may wait on the clock, so the
// simulator runs Step in a goroutine and waits until it returned or its Calls are parked in the
// runtime, as package calls describes. While Step runs, only Calls, Pods, PodsVersion and Update
// may be called.
package pods
