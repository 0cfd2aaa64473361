package topologymanager

import corev1 "k8s.io/api/core/v1"

// Provider is a resource manager the topology manager asks at admission (the kubelet's
// HintProvider): the static CPU manager, the Static memory manager.
type Provider interface {
	// Hints are c's hints (nil c: the pod's, for the pod scope), one list per resource as Merge
	// takes them; nil when it has no preference.
	Hints(pod *corev1.Pod, c *corev1.Container) [][]Hint
	// Allocate gives c its resources within the merged hint's affinity (0: none chosen).
	Allocate(pod *corev1.Pod, c *corev1.Container, affinity Mask) error
	// Release gives back what a pod refused at admission was given.
	Release(pod *corev1.Pod)
}
