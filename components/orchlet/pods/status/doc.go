// Package status is the pod workers' side of Kubernetes' status manager: the Generator makes a
// pod's status from its containers' runtime statuses and what the pod workers remember (why a
// container waits, its last exit with the termination message, its probes), with the phase as the
// kubelet's getPhase and the kubelet's pod conditions; the Cache holds the pods last published,
// for readers on any goroutine, with those the eviction manager asked to evict and those whose
// containers are stopped.
package status
