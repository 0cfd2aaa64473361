package pods

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// insufficientResource is the node resources fit check of the kubelet's predicate admission
// handler (noderesources.Fits): the checked resource the pod requests more of than the node's
// allocatable leaves after the active pods' requests, as its reason ("OutOfcpu") and message;
// "" when the pod fits. cpu is counted in millicores, the rest in units; cpu, memory and
// ephemeral-storage come checked (ephemeral storage only where the node measures it), then huge
// pages by size, of which a node without them has none. Other resources are extended ones, which
// the kubelet leaves out when the node does not name them and which this agent never has.
func insufficientResource(pod *corev1.Pod, active []*corev1.Pod, allocatable corev1.ResourceList) (reason, message string) {
	want := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	used := corev1.ResourceList{}
	for _, p := range active {
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			sum := used[name]
			sum.Add(q)
			used[name] = sum
		}
	}
	checked := []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}
	if _, ok := allocatable[corev1.ResourceEphemeralStorage]; !ok {
		checked = checked[:2]
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			checked = append(checked, name)
		}
	}
	for _, name := range checked {
		q, ok := want[name]
		if !ok || q.IsZero() {
			continue
		}
		value := func(l corev1.ResourceList) int64 {
			v := l[name]
			if name == corev1.ResourceCPU {
				return v.MilliValue()
			}
			return v.Value()
		}
		requested, inUse, capacity := value(want), value(used), value(allocatable)
		if requested > capacity-inUse {
			return "OutOf" + string(name), fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, requested, inUse, capacity)
		}
	}
	return "", ""
}

// activePods are the admitted pods whose requests hold the node's resources, as the kubelet's
// active pods: neither rejected, evicted nor gone, nor last published Succeeded or Failed; the
// pod being admitted, except, left out.
func (m *Manager) activePods(except *podState) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range m.pods {
		if p == except || p.Rejected != "" || p.Evicted != nil || p.Gone {
			continue
		}
		if p.snap != nil && (p.snap.Status.Phase == corev1.PodSucceeded || p.snap.Status.Phase == corev1.PodFailed) {
			continue
		}
		out = append(out, p.Pod)
	}
	return out
}
