package podsync

import (
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// statusEqual is reflect.DeepEqual of two pod statuses, field by field: a sync compares the
// status it built with the last at every sync of every pod, and reflection over the whole status
// was 3% of a simulated node-day's CPU. The fields the agent rarely sets (resources, claims,
// users, volume health) go through reflect.DeepEqual when either side has them. Times compare as
// == compares them (instant and location pointer), which for the times one clock makes is
// DeepEqual's answer. TestStatusEqualIsDeepEqual fails when the API grows a field this does not
// compare.
func statusEqual(a, b *corev1.PodStatus) bool {
	return a.ObservedGeneration == b.ObservedGeneration && a.Phase == b.Phase && a.Message == b.Message &&
		a.Reason == b.Reason && a.NominatedNodeName == b.NominatedNodeName && a.HostIP == b.HostIP &&
		a.PodIP == b.PodIP && a.QOSClass == b.QOSClass && a.Resize == b.Resize &&
		sameSlice(a.Conditions, b.Conditions) && sameSlice(a.HostIPs, b.HostIPs) && sameSlice(a.PodIPs, b.PodIPs) &&
		samePointee(a.StartTime, b.StartTime) &&
		containerStatusesEqual(a.InitContainerStatuses, b.InitContainerStatuses) &&
		containerStatusesEqual(a.ContainerStatuses, b.ContainerStatuses) &&
		containerStatusesEqual(a.EphemeralContainerStatuses, b.EphemeralContainerStatuses) &&
		deepIfAny(a.ResourceClaimStatuses == nil && b.ResourceClaimStatuses == nil, a.ResourceClaimStatuses, b.ResourceClaimStatuses) &&
		deepIfAny(a.ExtendedResourceClaimStatus == nil && b.ExtendedResourceClaimStatus == nil, a.ExtendedResourceClaimStatus, b.ExtendedResourceClaimStatus) &&
		deepIfAny(a.AllocatedResources == nil && b.AllocatedResources == nil, a.AllocatedResources, b.AllocatedResources) &&
		deepIfAny(a.Resources == nil && b.Resources == nil, a.Resources, b.Resources) &&
		deepIfAny(a.NodeAllocatableResourceClaimStatuses == nil && b.NodeAllocatableResourceClaimStatuses == nil, a.NodeAllocatableResourceClaimStatuses, b.NodeAllocatableResourceClaimStatuses) &&
		deepIfAny(a.VolumeHealth == nil && b.VolumeHealth == nil, a.VolumeHealth, b.VolumeHealth)
}

func containerStatusesEqual(a, b []corev1.ContainerStatus) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Name != y.Name || x.Ready != y.Ready || x.RestartCount != y.RestartCount || x.Image != y.Image ||
			x.ImageID != y.ImageID || x.ContainerID != y.ContainerID ||
			!stateEqual(&x.State, &y.State) || !stateEqual(&x.LastTerminationState, &y.LastTerminationState) ||
			!samePointee(x.Started, y.Started) || !samePointee(x.StopSignal, y.StopSignal) ||
			!deepIfAny(x.AllocatedResources == nil && y.AllocatedResources == nil, x.AllocatedResources, y.AllocatedResources) ||
			!deepIfAny(x.Resources == nil && y.Resources == nil, x.Resources, y.Resources) ||
			!deepIfAny(x.VolumeMounts == nil && y.VolumeMounts == nil, x.VolumeMounts, y.VolumeMounts) ||
			!deepIfAny(x.User == nil && y.User == nil, x.User, y.User) ||
			!deepIfAny(x.AllocatedResourcesStatus == nil && y.AllocatedResourcesStatus == nil, x.AllocatedResourcesStatus, y.AllocatedResourcesStatus) {
			return false
		}
	}
	return true
}

func stateEqual(a, b *corev1.ContainerState) bool {
	return samePointee(a.Waiting, b.Waiting) && samePointee(a.Running, b.Running) && samePointee(a.Terminated, b.Terminated)
}

// sameSlice is reflect.DeepEqual of slices of comparable elements: nil differs from empty.
func sameSlice[T comparable](a, b []T) bool { return (a == nil) == (b == nil) && slices.Equal(a, b) }

// samePointee is reflect.DeepEqual of pointers to comparable values.
func samePointee[T comparable](a, b *T) bool { return a == b || a != nil && b != nil && *a == *b }

// deepIfAny is reflect.DeepEqual of a and b unless both are nil (none: equal without boxing
// them).
func deepIfAny[T any](none bool, a, b T) bool { return none || reflect.DeepEqual(a, b) }
