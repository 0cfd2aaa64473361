// Package podsync makes the container runtime match one pod, as Kubernetes' kuberuntime's SyncPod
// does for the kubelet's pod workers: it brings up the pod's sandbox, runs its init containers one
// at a time to success and its sidecars in order, starts and restarts its regular containers as
// the restart policy and the crash-loop back-off allow, kills what a failed probe condemns, stops
// a terminal or evicted pod, and tears down a removed one; it makes the CRI configs (sandbox and
// containers) and the pod's status as it goes.
package podsync
