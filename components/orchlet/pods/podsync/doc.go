// Package podsync makes the container runtime match one pod, as Kubernetes' kuberuntime's SyncPod
// does for the kubelet's pod workers, and makes the CRI configs (the sandbox's and each
// container's) and the pod's status as it goes.
//
// A pod's lifecycle is the kubelet's. Its sandbox comes first, after its volumes and its cgroup;
// init containers run one at a time to success before the regular containers, and sidecars (init
// containers with restartPolicy Always) start in order, each once the one before has started, and
// keep running; restartPolicy Never, OnFailure and Always decide restarts and the phase, a pod
// whose containers are done for good (or past activeDeadlineSeconds) being terminal and stopped;
// an exited container restarts after its crash-loop back-off. A container whose liveness or
// startup probe failed is killed and restarted. postStart and preStop hooks run around a
// container's start and stop; StopContainer gets the grace period left after the preStop hook, at
// least 2 seconds; regular containers stop before sidecars, sidecars in reverse order. A sleep
// hook waits on the pod workers' queue, not in a call, so a sync never blocks on the clock outside
// the runtime. An evicted pod is stopped and stays Failed; a removed one is torn down.
//
// The decisions (core.go) are pure functions of the pod, what the runtime listed and reported,
// what the pod workers remember and the time, table-tested without a runtime; the sync around them
// calls the runtime. A sync reads each container's status just before deciding about it, and acts
// on it before reading the next.
package podsync
