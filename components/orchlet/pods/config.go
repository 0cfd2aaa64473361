package pods

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/pods/labels"
	"orch.io/orch/components/orchlet/pods/security"
)

// sandboxConfig is the RunPodSandbox config Kubernetes' kubelet sends: metadata, hostname, log
// directory, DNS, port mappings, the pod's labels plus the agent's, its annotations, and the
// Linux namespace options.
func (m *Manager) sandboxConfig(pod *corev1.Pod, attempt uint32) *runtimeapi.PodSandboxConfig {
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
		LogDirectory: filepath.Join(m.logsDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)),
		Labels:       podLabels,
		Annotations:  annotations,
		Linux:        &runtimeapi.LinuxPodSandboxConfig{SecurityContext: security.Sandbox(pod)},
	}
	cfg.DnsConfig = m.podDNS(pod)
	cfg.Linux.CgroupParent = m.qos.PodCgroupParent(pod)
	cfg.Linux.Resources, cfg.Linux.Overhead = m.qos.SandboxResources(pod)
	if sc := pod.Spec.SecurityContext; sc != nil && len(sc.Sysctls) > 0 {
		cfg.Linux.Sysctls = map[string]string{}
		for _, s := range sc.Sysctls {
			cfg.Linux.Sysctls[security.NormalizeSysctl(s.Name)] = s.Value
		}
	}
	for i := range pod.Spec.Containers {
		cfg.PortMappings = append(cfg.PortMappings, portMappings(&pod.Spec.Containers[i])...)
	}
	return cfg
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

// containerConfig is the CreateContainer config for attempt number attempt of c, labelled so the
// agent can find it again, as kuberuntime's generateContainerConfig builds it.
func (m *Manager) containerConfig(ctx context.Context, p *podState, c *corev1.Container, imageRef string, attempt uint32) (*runtimeapi.ContainerConfig, error) {
	pod := p.pod
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
	// generateContainerConfig's order: the run options (env, volume mounts), then the image's user
	// (asked for the image as the pod names it) checked against runAsNonRoot, then the rest.
	envs, vars, err := m.containerEnv(ctx, p, c)
	if err != nil {
		return nil, err
	}
	mounts, err := m.containerMounts(p, c)
	if err != nil {
		return nil, err
	}
	uid, username, err := m.imageUser(ctx, c.Image)
	if err != nil {
		return nil, err
	}
	if err := security.VerifyRunAsNonRoot(pod, c, uid, username); err != nil {
		return nil, err
	}
	cfg.Envs = envs
	cfg.Command, cfg.Args = expandCommand(c.Command, vars), expandCommand(c.Args, vars)
	if t := m.terminationMount(pod, c, attempt); t != nil {
		mounts = append(mounts, t)
	}
	cfg.Mounts = mounts
	sc, err := m.security.Container(pod, c, uid, username)
	if err != nil {
		return nil, err
	}
	cfg.Linux = &runtimeapi.LinuxContainerConfig{Resources: m.qos.ContainerResources(pod, c), SecurityContext: sc}
	return cfg, nil
}

// Kubernetes' DNS limits: what the sandbox's resolv.conf may hold.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	maxDNSSearchLength    = 253 // longer search paths make some resolvers abort
)

// podDNS is the sandbox's DNS configuration as Kubernetes' kubelet forms it: dnsPolicy None starts
// empty; ClusterFirst (the default, which a host-network pod only gets as
// ClusterFirstWithHostNet) uses the --cluster-dns servers only, the --cluster-domain search
// domains before the host's, and ndots:5; Default, and ClusterFirst without --cluster-dns, use
// the host's --resolv-conf. The pod's own dnsConfig is appended, and the result cut to the limits.
func (m *Manager) podDNS(pod *corev1.Pod) *runtimeapi.DNSConfig {
	cfg := &runtimeapi.DNSConfig{}
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = corev1.DNSClusterFirst
	}
	// An unknown policy (the API server would have refused it) is ClusterFirst, as in the kubelet.
	cluster := policy == corev1.DNSClusterFirstWithHostNet || policy == corev1.DNSClusterFirst && !pod.Spec.HostNetwork ||
		policy != corev1.DNSClusterFirst && policy != corev1.DNSDefault && policy != corev1.DNSNone
	switch {
	case policy == corev1.DNSNone:
	case cluster && len(m.dns) > 0:
		cfg.Servers = slices.Clone(m.dns)
		cfg.Searches = slices.Clone(m.hostDNS.GetSearches())
		if m.domain != "" {
			cfg.Searches = omitDuplicates(append([]string{pod.Namespace + ".svc." + m.domain, "svc." + m.domain, m.domain}, cfg.Searches...))
		}
		cfg.Options = []string{"ndots:5"}
	case m.resolvConf == "":
		// No --resolv-conf: the node's own resolver, and no search, as the kubelet sends.
		cfg.Servers, cfg.Searches = []string{"127.0.0.1"}, []string{"."}
	default:
		cfg.Servers = slices.Clone(m.hostDNS.GetServers())
		cfg.Searches = slices.Clone(m.hostDNS.GetSearches())
		cfg.Options = slices.Clone(m.hostDNS.GetOptions())
	}
	if d := pod.Spec.DNSConfig; d != nil {
		cfg.Servers = omitDuplicates(append(cfg.Servers, d.Nameservers...))
		cfg.Searches = omitDuplicates(append(cfg.Searches, d.Searches...))
		for _, o := range d.Options {
			opt := o.Name
			if o.Value != nil && *o.Value != "" {
				opt += ":" + *o.Value
			}
			cfg.Options = mergeDNSOptions(cfg.Options, opt)
		}
	}
	if len(cfg.Servers) > maxDNSNameservers {
		cfg.Servers = cfg.Servers[:maxDNSNameservers]
		m.rec.Eventf(podRef(pod), corev1.EventTypeWarning, "DNSConfigForming", "CreatePodSandbox",
			"Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: %s", strings.Join(cfg.Servers, " "))
	}
	var cut bool
	if cfg.Searches, cut = searchWithinLimits(cfg.Searches); cut {
		m.rec.Eventf(podRef(pod), corev1.EventTypeWarning, "DNSConfigForming", "CreatePodSandbox",
			"Search Line limits were exceeded, some search paths have been omitted, the applied search line is: %s", strings.Join(cfg.Searches, " "))
	}
	return cfg
}

// searchWithinLimits drops search paths past the count limit, those too long, and then the last
// ones until the line fits, and says whether it dropped any.
func searchWithinLimits(searches []string) ([]string, bool) {
	cut := false
	if len(searches) > maxDNSSearchPaths {
		searches, cut = searches[:maxDNSSearchPaths], true
	}
	kept := searches[:0]
	for _, s := range searches {
		if len(s) > maxDNSSearchLength {
			cut = true
			continue
		}
		kept = append(kept, s)
	}
	for len(kept) > 0 && len(strings.Join(kept, " ")) > maxDNSSearchListChars {
		kept, cut = kept[:len(kept)-1], true
	}
	return kept, cut
}

func omitDuplicates(list []string) []string {
	seen := map[string]bool{}
	out := list[:0]
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// mergeDNSOptions sets options ("name" or "name:value") over base ones by name, as the kubelet
// does; an option keeps the place its name first had.
func mergeDNSOptions(base []string, options ...string) []string {
	var out []string
	at := map[string]int{}
	for _, o := range append(slices.Clone(base), options...) {
		name, _, _ := strings.Cut(o, ":")
		if i, ok := at[name]; ok {
			out[i] = o
			continue
		}
		at[name] = len(out)
		out = append(out, o)
	}
	return out
}

// parseResolvConf reads the nameservers, search paths and options of a resolv.conf, as the
// kubelet does: the last search line wins, and "." and trailing dots are dropped from it.
func parseResolvConf(data []byte) *runtimeapi.DNSConfig {
	cfg := &runtimeapi.DNSConfig{}
	for _, line := range strings.Split(string(data), "\n") {
		if line != "" && (line[0] == '#' || line[0] == ';') {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) > 1 {
				cfg.Servers = append(cfg.Servers, f[1])
			}
		case "search":
			cfg.Searches = []string{}
			for _, s := range f[1:] {
				if s != "." {
					cfg.Searches = append(cfg.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			cfg.Options = mergeDNSOptions(cfg.Options, f[1:]...)
		}
	}
	return cfg
}
