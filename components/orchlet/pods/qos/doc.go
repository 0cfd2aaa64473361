// Package qos is the pod workers' side of Kubernetes' container manager and QoS policy: a pod's
// QoS class (Guaranteed, Burstable, BestEffort), the CPU shares, CFS quota, memory and huge page
// limits and the OOM score the CRI gets for each sandbox and container
// (kuberuntime's calculateLinuxResources, qos.GetContainerOOMScoreAdjust), and on a real host the
// pod-level cgroups under orchpods/<qos>/pod<uid> (Kubernetes' kubepods renamed) with the pod's
// pids limit, which the CRI has no field for, and the QoS cgroups' CPU shares; the judgement of
// orphaned pod cgroups (cleanupOrphanedPodCgroups) and their destruction. A cgroup name is
// written for the cgroupfs or the systemd driver as the kubelet's cgroup manager writes it.
package qos
