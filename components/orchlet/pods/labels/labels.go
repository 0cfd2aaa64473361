// Package labels names what the agent puts on the sandboxes and containers it creates, so that it,
// its garbage collectors and its stats can tell its pods' objects apart: Kubernetes'
// io.kubernetes.* keys renamed io.orch.*. Sandboxes and containers without PodUID are never touched.
package labels

import corev1 "k8s.io/api/core/v1"

// The keys on every sandbox and container of a pod, and the container's own.
const (
	PodName       = "io.orch.pod.name"
	PodNamespace  = "io.orch.pod.namespace"
	PodUID        = "io.orch.pod.uid"
	ContainerName = "io.orch.container.name"
	// RestartCount is the annotation recording a container's restart count, as
	// io.kubernetes.container.restartCount.
	RestartCount = "io.orch.container.restartCount"
	// PodTerminationGracePeriod is the annotation recording the pod's terminationGracePeriodSeconds
	// on each container, as io.kubernetes.pod.terminationGracePeriod: the grace an agent restarted
	// after the pod left its sources stops the container with.
	PodTerminationGracePeriod = "io.orch.pod.terminationGracePeriod"
)

// Pod are the labels that tie a sandbox or container to the pod.
func Pod(pod *corev1.Pod) map[string]string {
	return map[string]string{
		PodName:      pod.Name,
		PodNamespace: pod.Namespace,
		PodUID:       string(pod.UID),
	}
}

// Container are the labels of the pod's container name.
func Container(pod *corev1.Pod, name string) map[string]string {
	l := Pod(pod)
	l[ContainerName] = name
	return l
}

// UIDSelector selects the sandboxes or containers of the pod uid in a CRI list filter.
func UIDSelector(uid string) map[string]string {
	return map[string]string{PodUID: uid}
}
