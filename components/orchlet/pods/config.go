package pods

import (
	"fmt"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Labels the agent puts on what it creates, Kubernetes' io.kubernetes.* keys renamed.
const (
	LabelPodName       = "io.orch.pod.name"
	LabelPodNamespace  = "io.orch.pod.namespace"
	LabelPodUID        = "io.orch.pod.uid"
	LabelContainerName = "io.orch.container.name"
	// AnnotationRestartCount records a container's restart count, as io.kubernetes.container.restartCount.
	AnnotationRestartCount = "io.orch.container.restartCount"
)

func podLabels(pod *corev1.Pod) map[string]string {
	return map[string]string{
		LabelPodName:      pod.Name,
		LabelPodNamespace: pod.Namespace,
		LabelPodUID:       string(pod.UID),
	}
}

// sandboxConfig is the RunPodSandbox config Kubernetes' kubelet sends: metadata, hostname, log
// directory, DNS, port mappings, the pod's labels plus the agent's, its annotations, and the
// Linux namespace options.
func (m *Manager) sandboxConfig(pod *corev1.Pod, attempt uint32) *runtimeapi.PodSandboxConfig {
	labels := map[string]string{}
	for k, v := range pod.Labels {
		labels[k] = v
	}
	for k, v := range podLabels(pod) {
		labels[k] = v
	}
	annotations := map[string]string{}
	for k, v := range pod.Annotations {
		annotations[k] = v
	}
	// A host-network pod shares the node's UTS namespace, where the runtime cannot set a hostname
	// of the pod's own (runc refuses), so the kubelet sends none.
	hostname := ""
	if !pod.Spec.HostNetwork {
		hostname = pod.Name
		if pod.Spec.Hostname != "" {
			hostname = pod.Spec.Hostname
		}
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt},
		Hostname:     hostname,
		LogDirectory: filepath.Join(m.logsDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)),
		Labels:       labels,
		Annotations:  annotations,
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: namespaceOptions(pod)},
		},
	}
	if len(m.dns) > 0 && !pod.Spec.HostNetwork {
		cfg.DnsConfig = &runtimeapi.DNSConfig{Servers: m.dns}
		if m.domain != "" {
			cfg.DnsConfig.Searches = []string{pod.Namespace + ".svc." + m.domain, "svc." + m.domain, m.domain}
			cfg.DnsConfig.Options = []string{"ndots:5"}
		}
	}
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			cfg.PortMappings = append(cfg.PortMappings, &runtimeapi.PortMapping{
				Protocol: protocol(p.Protocol), ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP,
			})
		}
	}
	return cfg
}

func namespaceOptions(pod *corev1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER}
	if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostPID {
		ns.Pid = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostNetwork {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	return ns
}

func protocol(p corev1.Protocol) runtimeapi.Protocol {
	switch p {
	case corev1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case corev1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}

// containerConfig is the CreateContainer config for attempt number attempt of c, labelled so the
// agent can find it again.
func containerConfig(pod *corev1.Pod, c *corev1.Container, imageRef string, attempt uint32) *runtimeapi.ContainerConfig {
	labels := podLabels(pod)
	labels[LabelContainerName] = c.Name
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: attempt},
		Image:       &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: c.Image},
		Command:     c.Command,
		Args:        c.Args,
		WorkingDir:  c.WorkingDir,
		Labels:      labels,
		Annotations: map[string]string{AnnotationRestartCount: strconv.Itoa(int(attempt))},
		LogPath:     filepath.Join(c.Name, strconv.Itoa(int(attempt))+".log"),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
	}
	for _, e := range c.Env {
		cfg.Envs = append(cfg.Envs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	res := &runtimeapi.LinuxContainerResources{}
	if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		res.MemoryLimitInBytes = q.Value()
	}
	if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok {
		res.CpuPeriod = 100000
		res.CpuQuota = q.MilliValue() * 100000 / 1000
	}
	cfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: res}
	return cfg
}
