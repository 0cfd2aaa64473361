package volumes

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// PodFieldValue is the kubelet's podFieldSelectorRuntimeValue with fieldpath.ExtractFieldPathAsString.
func (m *Manager) PodFieldValue(p Pod, fs *corev1.ObjectFieldSelector) (string, error) {
	pod := p.Pod
	switch path := fs.FieldPath; path {
	case "spec.nodeName":
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		return m.node.Name, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		if len(m.node.HostIPs) == 0 {
			return "", errors.New("cannot determine the node's IP addresses for " + path)
		}
		if path == "status.hostIP" {
			return m.node.HostIPs[0], nil
		}
		return strings.Join(m.node.HostIPs, ","), nil
	case "status.podIP", "status.podIPs":
		ips := m.PodIPs(p)
		if len(ips) == 0 {
			return "", nil
		}
		if path == "status.podIP" {
			return ips[0], nil
		}
		return strings.Join(ips, ","), nil
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	}
	for _, sub := range []struct {
		prefix string
		m      map[string]string
	}{{"metadata.labels['", pod.Labels}, {"metadata.annotations['", pod.Annotations}} {
		if key, ok := strings.CutPrefix(fs.FieldPath, sub.prefix); ok && strings.HasSuffix(key, "']") {
			return sub.m[strings.TrimSuffix(key, "']")], nil
		}
	}
	return "", fmt.Errorf("unsupported fieldPath: %v", fs.FieldPath)
}

// PodIPs are the pod's addresses as the kubelet's SyncPod hands them to the container builders:
// a host-network pod has the node's (generateAPIPodStatus, kubernetes#24576), the others the
// sandbox's.
func (m *Manager) PodIPs(p Pod) []string {
	if p.Pod.Spec.HostNetwork && len(m.node.HostIPs) > 0 {
		return m.node.HostIPs
	}
	if p.PodIP != "" {
		return []string{p.PodIP}
	}
	return nil
}

// formatMap is fieldpath.FormatMap: key="value" lines in key order.
func formatMap(m map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%v=%q", k, m[k])
	}
	return b.String()
}

// ResourceFieldValue is the kubelet's containerResourceRuntimeValue over
// defaultPodLimitsForDownwardAPI: a limit not set is the node's allocatable (its CPUs and memory),
// divided by the divisor (1 when unset) and rounded up.
func (m *Manager) ResourceFieldValue(pod *corev1.Pod, c *corev1.Container, fs *corev1.ResourceFieldSelector) (string, error) {
	target := c
	if fs.ContainerName != "" {
		target = nil
		for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range cs {
				if cs[i].Name == fs.ContainerName {
					target = &cs[i]
				}
			}
		}
		if target == nil {
			return "", fmt.Errorf("container %s not found", fs.ContainerName)
		}
	}
	if target == nil {
		return "", fmt.Errorf("resourceFieldRef %s: containerName is required", fs.Resource)
	}
	divisor := fs.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	limits := target.Resources.Limits.DeepCopy()
	if limits == nil {
		limits = corev1.ResourceList{}
	}
	if _, ok := limits[corev1.ResourceCPU]; !ok && m.node.Cores > 0 {
		limits[corev1.ResourceCPU] = *resource.NewQuantity(int64(m.node.Cores), resource.DecimalSI)
	}
	if _, ok := limits[corev1.ResourceMemory]; !ok && m.node.MemoryCapacity > 0 {
		limits[corev1.ResourceMemory] = *resource.NewQuantity(m.node.MemoryCapacity, resource.BinarySI)
	}
	source, name, ok := strings.Cut(fs.Resource, ".")
	if !ok || (source != "limits" && source != "requests") {
		return "", fmt.Errorf("unsupported container resource : %v", fs.Resource)
	}
	list := limits
	if source == "requests" {
		list = target.Resources.Requests
	}
	q := list[corev1.ResourceName(name)]
	switch rn := corev1.ResourceName(name); {
	case rn == corev1.ResourceCPU:
		return strconv.FormatInt(int64(math.Ceil(float64(q.MilliValue())/float64(divisor.MilliValue()))), 10), nil
	case rn == corev1.ResourceMemory, rn == corev1.ResourceEphemeralStorage, strings.HasPrefix(name, corev1.ResourceHugePagesPrefix):
		return strconv.FormatInt(int64(math.Ceil(float64(q.Value())/float64(divisor.Value()))), 10), nil
	}
	return "", fmt.Errorf("unsupported container resource : %v", fs.Resource)
}
