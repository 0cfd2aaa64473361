package podsync

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/labels"
	"orch.io/orch/components/orchlet/pods/security"
)

// SandboxConfig is the RunPodSandbox config Kubernetes' kubelet sends: metadata, hostname, log
// directory, DNS, port mappings, the pod's labels plus the agent's, its annotations, and the
// Linux namespace options.
func (s *Syncer) SandboxConfig(pod *corev1.Pod, attempt uint32) *runtimeapi.PodSandboxConfig {
	return s.sandboxConfig(pod, attempt, s.dns.PodDNS(pod))
}

// sandboxConfig is SandboxConfig with its DNS config formed already: forming it may record events,
// which every sync does, where the rest is made only when a container starts.
func (s *Syncer) sandboxConfig(pod *corev1.Pod, attempt uint32, dns *runtimeapi.DNSConfig) *runtimeapi.PodSandboxConfig {
	podLabels := map[string]string{}
	for k, v := range pod.Labels {
		podLabels[k] = v
	}
	for k, v := range labels.Pod(pod) {
		podLabels[k] = v
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
		LogDirectory: LogDirectory(s.logsDir, pod),
		Labels:       podLabels,
		Annotations:  annotations,
		Linux:        &runtimeapi.LinuxPodSandboxConfig{SecurityContext: security.Sandbox(pod)},
	}
	cfg.DnsConfig = dns
	cfg.Linux.CgroupParent = s.qos.PodCgroupParent(pod)
	cfg.Linux.Resources, cfg.Linux.Overhead = s.qos.SandboxResources(pod)
	if sc := pod.Spec.SecurityContext; sc != nil && len(sc.Sysctls) > 0 {
		cfg.Linux.Sysctls = map[string]string{}
		for _, sysctl := range sc.Sysctls {
			cfg.Linux.Sysctls[security.NormalizeSysctl(sysctl.Name)] = sysctl.Value
		}
	}
	for i := range pod.Spec.Containers {
		cfg.PortMappings = append(cfg.PortMappings, portMappings(&pod.Spec.Containers[i])...)
	}
	return cfg
}

// LogDirectory is the pod's log directory under logsDir, <namespace>_<name>_<uid>, as the kubelet's
// BuildPodLogsDirectory names it. An eviction round names every pod's: it is built without fmt.
func LogDirectory(logsDir string, pod *corev1.Pod) string {
	return filepath.Join(logsDir, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
}

// portMappings is kubecontainer.MakePortMappings: a container's ports, a port whose name (or,
// unnamed, whose family, protocol, host IP and ports) repeats an earlier one's left out.
func portMappings(c *corev1.Container) []*runtimeapi.PortMapping {
	var out []*runtimeapi.PortMapping
	names := map[string]bool{}
	for _, p := range c.Ports {
		name := p.Name
		if name == "" {
			family := "any"
			if ip := net.ParseIP(p.HostIP); ip != nil && ip.To4() == nil {
				family = "v6"
			} else if ip != nil {
				family = "v4"
			}
			name = fmt.Sprintf("%s-%s-%s:%d:%d", family, p.Protocol, p.HostIP, p.ContainerPort, p.HostPort)
		}
		if names[name] {
			continue
		}
		names[name] = true
		out = append(out, &runtimeapi.PortMapping{
			Protocol: protocol(p.Protocol), ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP,
		})
	}
	return out
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

// ContainerConfig is the CreateContainer config for attempt number attempt of c, labelled so the
// agent can find it again, as kuberuntime's generateContainerConfig builds it.
func (s *Syncer) ContainerConfig(ctx context.Context, p *PodState, c *corev1.Container, imageRef string, attempt uint32) (*runtimeapi.ContainerConfig, error) {
	pod := p.Pod
	cfg := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: attempt},
		Image:       &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: c.Image},
		WorkingDir:  c.WorkingDir,
		Labels:      labels.Container(pod, c.Name),
		Annotations: map[string]string{labels.RestartCount: strconv.Itoa(int(attempt))},
		LogPath:     filepath.Join(c.Name, strconv.Itoa(int(attempt))+".log"),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		cfg.Annotations[labels.PodTerminationGracePeriod] = strconv.FormatInt(*g, 10)
	}
	// generateContainerConfig's order: the run options (env, volume mounts), then the image's user
	// (asked for the image as the pod names it) checked against runAsNonRoot, then the rest.
	envs, vars, err := s.containerEnv(ctx, p, c)
	if err != nil {
		return nil, err
	}
	mounts, err := s.volumes.Mounts(p.volumes(), c)
	if err != nil {
		return nil, err
	}
	uid, username, err := s.images.User(ctx, c.Image)
	if err != nil {
		return nil, err
	}
	if err := security.VerifyRunAsNonRoot(pod, c, uid, username); err != nil {
		return nil, err
	}
	cfg.Envs = envs
	cfg.Command, cfg.Args = expandCommand(c.Command, vars), expandCommand(c.Args, vars)
	if t := s.volumes.TerminationMount(pod, c, attempt); t != nil {
		mounts = append(mounts, t)
	}
	cfg.Mounts = mounts
	sc, err := s.security.Container(pod, c, uid, username)
	if err != nil {
		return nil, err
	}
	cfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: s.qos.ContainerResources(pod, c), SecurityContext: sc}
	return cfg, nil
}
