package pods

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// expand is Kubernetes' third_party/forked/golang/expansion.Expand: $(NAME) is replaced by the
// mapping's value, $$ is a literal $, and anything else, an unknown name or an unclosed
// reference included, stays as written.
func expand(input string, mapping func(string) string) string {
	var buf bytes.Buffer
	checkpoint := 0
	for cursor := 0; cursor < len(input); cursor++ {
		if input[cursor] != '$' || cursor+1 >= len(input) {
			continue
		}
		buf.WriteString(input[checkpoint:cursor])
		read, isVar, advance := readVariableName(input[cursor+1:])
		if isVar {
			buf.WriteString(mapping(read))
		} else {
			buf.WriteString(read)
		}
		cursor += advance
		checkpoint = cursor + 1
	}
	return buf.String() + input[checkpoint:]
}

func readVariableName(input string) (string, bool, int) {
	switch input[0] {
	case '$':
		return "$", false, 1
	case '(':
		for i := 1; i < len(input); i++ {
			if input[i] == ')' {
				return input[1:i], true, i + 1
			}
		}
		return "$(", false, 1
	}
	return "$" + input[:1], false, 1
}

// mappingFor is expansion.MappingFuncFor: a name not found stays $(name).
func mappingFor(vars map[string]string) func(string) string {
	return func(name string) string {
		if v, ok := vars[name]; ok {
			return v
		}
		return "$(" + name + ")"
	}
}

// containerEnv is the kubelet's makeEnvironmentVariables: envFrom's variables first, then each
// of env's, its value expanded against the variables before it, or read from the pod (fieldRef),
// the container's resources (resourceFieldRef) or a configmap or secret (in API-server mode).
// The kubelet sends them in a map's order; here they keep the order they are declared in, a later
// duplicate taking the earlier one's place.
func (m *Manager) containerEnv(ctx context.Context, p *podState, c *corev1.Container) ([]*runtimeapi.KeyValue, map[string]string, error) {
	vars := map[string]string{}
	var order []string
	if m.objects != nil {
		if err := m.envFromObjects(ctx, p, c, vars, &order); err != nil {
			return nil, nil, err
		}
	}
	for _, e := range c.Env {
		v := e.Value
		switch {
		case m.objects != nil && e.ValueFrom != nil && (e.ValueFrom.ConfigMapKeyRef != nil || e.ValueFrom.SecretKeyRef != nil):
			value, skip, err := m.envKeyRef(ctx, p, e.ValueFrom)
			if err != nil {
				return nil, nil, err
			}
			if skip {
				continue
			}
			v = value
		case v != "":
			v = expand(v, mappingFor(vars))
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			var err error
			if v, err = m.podFieldValue(p, e.ValueFrom.FieldRef); err != nil {
				return nil, nil, err
			}
		case e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil:
			var err error
			if v, err = m.resourceFieldValue(p.pod, c, e.ValueFrom.ResourceFieldRef); err != nil {
				return nil, nil, err
			}
		case e.ValueFrom != nil:
			// Admission refuses the other sources; one reaching here is a bug, not an empty value.
			return nil, nil, fmt.Errorf("env %s: unsupported value source", e.Name)
		}
		if _, ok := vars[e.Name]; !ok {
			order = append(order, e.Name)
		}
		vars[e.Name] = v
	}
	out := make([]*runtimeapi.KeyValue, 0, len(order))
	for _, name := range order {
		out = append(out, &runtimeapi.KeyValue{Key: name, Value: []byte(vars[name])})
	}
	return out, vars, nil
}

// expandCommand is kubecontainer.ExpandContainerCommandAndArgs.
func expandCommand(list []string, vars map[string]string) []string {
	if len(list) == 0 {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = expand(s, mappingFor(vars))
	}
	return out
}

// podFieldValue is the kubelet's podFieldSelectorRuntimeValue with fieldpath.ExtractFieldPathAsString.
func (m *Manager) podFieldValue(p *podState, fs *corev1.ObjectFieldSelector) (string, error) {
	pod := p.pod
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
		ips := m.podIPs(p)
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

// podIPs are the pod's addresses as the kubelet's SyncPod hands them to the container builders:
// a host-network pod has the node's (generateAPIPodStatus, kubernetes#24576), the others the
// sandbox's.
func (m *Manager) podIPs(p *podState) []string {
	if p.pod.Spec.HostNetwork && len(m.node.HostIPs) > 0 {
		return m.node.HostIPs
	}
	if p.podIP != "" {
		return []string{p.podIP}
	}
	return nil
}

// formatMap is fieldpath.FormatMap: key="value" lines in key order.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%v=%q", k, m[k])
	}
	return b.String()
}

// resourceFieldValue is the kubelet's containerResourceRuntimeValue over
// defaultPodLimitsForDownwardAPI: a limit not set is the node's allocatable (its CPUs and memory),
// divided by the divisor (1 when unset) and rounded up.
func (m *Manager) resourceFieldValue(pod *corev1.Pod, c *corev1.Container, fs *corev1.ResourceFieldSelector) (string, error) {
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
	if _, ok := limits[corev1.ResourceCPU]; !ok && m.cores > 0 {
		limits[corev1.ResourceCPU] = *resource.NewQuantity(int64(m.cores), resource.DecimalSI)
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
