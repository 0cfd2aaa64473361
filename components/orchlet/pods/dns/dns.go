package dns

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/orchlet/events"
)

// Kubernetes' DNS limits: what the sandbox's resolv.conf may hold.
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	maxDNSSearchLength    = 253 // longer search paths make some resolvers abort
)

// Recorder records events; *events.Recorder is one.
type Recorder interface {
	Eventf(regarding *corev1.ObjectReference, eventType, reason, action, noteFormat string, args ...any)
}

// Configurer forms pods' DNS from the node's settings, as the kubelet's dns.Configurer.
type Configurer struct {
	rec     Recorder
	servers []string // --cluster-dns
	domain  string   // --cluster-domain
	// resolvConf is --resolv-conf and host what it held at start: the base of pods' DNS.
	resolvConf string
	host       *runtimeapi.DNSConfig
}

// New is the configurer of a node with the cluster DNS servers and domain, and the host's
// resolver configuration resolvConf, whose content at start is resolvData.
func New(rec Recorder, clusterDNS []string, clusterDomain, resolvConf string, resolvData []byte) *Configurer {
	c := &Configurer{rec: rec, servers: clusterDNS, domain: clusterDomain, resolvConf: resolvConf}
	if resolvConf != "" {
		c.host = parseResolvConf(resolvData)
	}
	return c
}

// PodDNS is the sandbox's DNS configuration as Kubernetes' kubelet forms it: dnsPolicy None starts
// empty; ClusterFirst (the default, which a host-network pod only gets as
// ClusterFirstWithHostNet) uses the --cluster-dns servers only, the --cluster-domain search
// domains before the host's, and ndots:5; Default, and ClusterFirst without --cluster-dns, use
// the host's --resolv-conf. The pod's own dnsConfig is appended, and the result cut to the limits.
func (c *Configurer) PodDNS(pod *corev1.Pod) *runtimeapi.DNSConfig {
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
	case cluster && len(c.servers) > 0:
		cfg.Servers = slices.Clone(c.servers)
		cfg.Searches = slices.Clone(c.host.GetSearches())
		if c.domain != "" {
			cfg.Searches = omitDuplicates(append([]string{pod.Namespace + ".svc." + c.domain, "svc." + c.domain, c.domain}, cfg.Searches...))
		}
		cfg.Options = []string{"ndots:5"}
	case c.resolvConf == "":
		// No --resolv-conf: the node's own resolver, and no search, as the kubelet sends.
		cfg.Servers, cfg.Searches = []string{"127.0.0.1"}, []string{"."}
	default:
		cfg.Servers = slices.Clone(c.host.GetServers())
		cfg.Searches = slices.Clone(c.host.GetSearches())
		cfg.Options = slices.Clone(c.host.GetOptions())
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
		c.rec.Eventf(events.PodReference(pod), corev1.EventTypeWarning, "DNSConfigForming", "CreatePodSandbox",
			"Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: %s", strings.Join(cfg.Servers, " "))
	}
	var cut bool
	if cfg.Searches, cut = searchWithinLimits(cfg.Searches); cut {
		c.rec.Eventf(events.PodReference(pod), corev1.EventTypeWarning, "DNSConfigForming", "CreatePodSandbox",
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
