package pods

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/fakecri"
)

const hostResolvConf = `# the node's
nameserver 192.0.2.53
nameserver 192.0.2.54
search corp.example. lab.example .
options ndots:2 timeout:1
options ndots:3
`

func TestPodDNSFollowsKubelet(t *testing.T) {
	clusterSearch := []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local"}
	hostSearch := []string{"corp.example", "lab.example"}
	value := func(s string) *string { return &s }
	cases := []struct {
		name        string
		dns         []string
		domain      string
		resolvConf  string // "": no --resolv-conf
		policy      corev1.DNSPolicy
		hostNetwork bool
		podDNS      *corev1.PodDNSConfig
		want        *runtimeapi.DNSConfig
		warning     string // a DNSConfigForming event naming this
	}{
		{name: "ClusterFirst: the cluster servers only, cluster domains before the host's, ndots:5",
			dns: []string{"10.0.0.10"}, domain: "cluster.local", resolvConf: hostResolvConf, policy: corev1.DNSClusterFirst,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.0.0.10"}, Searches: append(clusterSearch, hostSearch...), Options: []string{"ndots:5"}}},
		{name: "no dnsPolicy is ClusterFirst",
			dns: []string{"10.0.0.10", "10.0.0.11"}, domain: "cluster.local",
			want: &runtimeapi.DNSConfig{Servers: []string{"10.0.0.10", "10.0.0.11"}, Searches: clusterSearch, Options: []string{"ndots:5"}}},
		{name: "ClusterFirst without --cluster-domain: the host's search only",
			dns: []string{"10.0.0.10"}, resolvConf: hostResolvConf, policy: corev1.DNSClusterFirst,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.0.0.10"}, Searches: hostSearch, Options: []string{"ndots:5"}}},
		{name: "ClusterFirst without --cluster-dns falls back to the host's",
			domain: "cluster.local", resolvConf: hostResolvConf, policy: corev1.DNSClusterFirst,
			want: &runtimeapi.DNSConfig{Servers: []string{"192.0.2.53", "192.0.2.54"}, Searches: hostSearch, Options: []string{"ndots:3", "timeout:1"}}},
		{name: "ClusterFirst on the host network is Default",
			dns: []string{"10.0.0.10"}, domain: "cluster.local", resolvConf: hostResolvConf, policy: corev1.DNSClusterFirst, hostNetwork: true,
			want: &runtimeapi.DNSConfig{Servers: []string{"192.0.2.53", "192.0.2.54"}, Searches: hostSearch, Options: []string{"ndots:3", "timeout:1"}}},
		{name: "ClusterFirstWithHostNet on the host network",
			dns: []string{"10.0.0.10"}, domain: "cluster.local", policy: corev1.DNSClusterFirstWithHostNet, hostNetwork: true,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.0.0.10"}, Searches: clusterSearch, Options: []string{"ndots:5"}}},
		{name: "an unknown policy is ClusterFirst, even on the host network",
			dns: []string{"10.0.0.10"}, domain: "cluster.local", resolvConf: hostResolvConf, policy: "Cluster", hostNetwork: true,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.0.0.10"}, Searches: append(slices.Clone(clusterSearch), hostSearch...), Options: []string{"ndots:5"}}},
		{name: "Default: the host's",
			dns: []string{"10.0.0.10"}, domain: "cluster.local", resolvConf: hostResolvConf, policy: corev1.DNSDefault,
			want: &runtimeapi.DNSConfig{Servers: []string{"192.0.2.53", "192.0.2.54"}, Searches: hostSearch, Options: []string{"ndots:3", "timeout:1"}}},
		{name: "Default without --resolv-conf: the node's own resolver, no search",
			dns: []string{"10.0.0.10"}, policy: corev1.DNSDefault,
			want: &runtimeapi.DNSConfig{Servers: []string{"127.0.0.1"}, Searches: []string{"."}}},
		{name: "None: the pod's dnsConfig only",
			dns: []string{"10.0.0.10"}, domain: "cluster.local", resolvConf: hostResolvConf, policy: corev1.DNSNone,
			podDNS: &corev1.PodDNSConfig{Nameservers: []string{"198.51.100.1"}, Searches: []string{"my.example"}, Options: []corev1.PodDNSConfigOption{{Name: "edns0"}}},
			want:   &runtimeapi.DNSConfig{Servers: []string{"198.51.100.1"}, Searches: []string{"my.example"}, Options: []string{"edns0"}}},
		{name: "the pod's dnsConfig is appended without duplicates, its options set by name",
			dns: []string{"10.0.0.10"}, domain: "cluster.local", policy: corev1.DNSClusterFirst,
			podDNS: &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.10", "198.51.100.1"}, Searches: []string{"cluster.local", "my.example"},
				Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: value("2")}, {Name: "edns0"}}},
			want: &runtimeapi.DNSConfig{Servers: []string{"10.0.0.10", "198.51.100.1"}, Searches: append(slices.Clone(clusterSearch), "my.example"), Options: []string{"ndots:2", "edns0"}}},
		{name: "more than 3 nameservers are cut, with a warning",
			dns: []string{"10.0.0.10", "10.0.0.11", "10.0.0.12"}, domain: "cluster.local", policy: corev1.DNSClusterFirst,
			podDNS:  &corev1.PodDNSConfig{Nameservers: []string{"198.51.100.1"}},
			want:    &runtimeapi.DNSConfig{Servers: []string{"10.0.0.10", "10.0.0.11", "10.0.0.12"}, Searches: clusterSearch, Options: []string{"ndots:5"}},
			warning: "Nameserver limits were exceeded"},
		{name: "more than 32 search paths are cut, with a warning",
			policy: corev1.DNSNone, podDNS: &corev1.PodDNSConfig{Searches: searchPaths(40)},
			want:    &runtimeapi.DNSConfig{Searches: searchPaths(32)},
			warning: "Search Line limits were exceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := &fakeRecorder{clk: clock.NewMock()}
			m := &Manager{rec: rec, dns: tc.dns, domain: tc.domain}
			if tc.resolvConf != "" {
				m.resolvConf, m.hostDNS = "/etc/resolv.conf", parseResolvConf([]byte(tc.resolvConf))
			}
			pod := newPod("web")
			pod.Spec.DNSPolicy, pod.Spec.HostNetwork, pod.Spec.DNSConfig = tc.policy, tc.hostNetwork, tc.podDNS
			got := m.podDNS(pod)
			if !slices.Equal(got.Servers, tc.want.Servers) || !slices.Equal(got.Searches, tc.want.Searches) || !slices.Equal(got.Options, tc.want.Options) {
				t.Errorf("dns = %v\nwant %v", got, tc.want)
			}
			events := rec.reasons("DNSConfigForming")
			switch {
			case tc.warning == "" && len(events) > 0:
				t.Errorf("unexpected events %v", events)
			case tc.warning != "" && (len(events) != 1 || events[0].kind != corev1.EventTypeWarning || !strings.Contains(events[0].note, tc.warning)):
				t.Errorf("events %v, want one Warning naming %q", events, tc.warning)
			}
		})
	}
}

func searchPaths(n int) []string {
	var out []string
	for i := range n {
		out = append(out, "s"+strings.Repeat("x", i)+".example")
	}
	return out
}

func TestSearchWithinLimits(t *testing.T) {
	long := strings.Repeat("a", 254)
	if got, cut := searchWithinLimits([]string{"a.example", long, "b.example"}); !cut || !slices.Equal(got, []string{"a.example", "b.example"}) {
		t.Errorf("a search path over 253 characters: %v cut %t", got, cut)
	}
	// 10 paths of 250 characters are 2509 with the spaces: the last two go to fit in 2048.
	var paths []string
	for i := range 10 {
		paths = append(paths, strings.Repeat(string(rune('a'+i)), 250))
	}
	got, cut := searchWithinLimits(slices.Clone(paths))
	if !cut || !slices.Equal(got, paths[:8]) {
		t.Errorf("a search line over 2048 characters kept %d paths, cut %t; want 8", len(got), cut)
	}
	if got, cut := searchWithinLimits([]string{"a.example"}); cut || len(got) != 1 {
		t.Errorf("within limits: %v cut %t", got, cut)
	}
}

// TestResolvConfReadAtStart checks the sandbox of a Default pod gets what --resolv-conf held, and
// a missing file leaves pods the runtime's default rather than stopping the agent.
func TestResolvConfReadAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(path, []byte(hostResolvConf), 0o600); err != nil {
		t.Fatal(err)
	}
	pod := newPod("web", ctr("web", "nginx:1.27"))
	pod.Spec.DNSPolicy = corev1.DNSDefault
	h := newHarness(t, &fakecri.Script{}, config(func(c *v1beta1.OrchletConfiguration) { c.ResolverConfig = path }), nil)
	if got := h.m.sandboxConfig(pod, 0).DnsConfig; !slices.Equal(got.Servers, []string{"192.0.2.53", "192.0.2.54"}) || !slices.Equal(got.Searches, []string{"corp.example", "lab.example"}) {
		t.Errorf("dns from %s = %v", path, got)
	}
	h = newHarness(t, &fakecri.Script{}, config(func(c *v1beta1.OrchletConfiguration) { c.ResolverConfig = path + ".missing" }), nil)
	if got := h.m.sandboxConfig(pod, 0).DnsConfig; len(got.Servers)+len(got.Searches)+len(got.Options) > 0 {
		t.Errorf("dns without a readable --resolv-conf = %v, want empty", got)
	}
	// A node's injected filesystem (the simulator's) is read instead of the machine's.
	node := fstest.MapFS{"etc/resolv.conf": {Data: []byte("nameserver 198.51.100.1\nsearch node.example\n")}}
	h = newHarness(t, &fakecri.Script{}, config(func(c *v1beta1.OrchletConfiguration) { c.ResolverConfig = "/etc/resolv.conf" }), func(o *Options) { o.FS = node })
	if got := h.m.sandboxConfig(pod, 0).DnsConfig; !slices.Equal(got.Servers, []string{"198.51.100.1"}) || !slices.Equal(got.Searches, []string{"node.example"}) {
		t.Errorf("dns from the injected filesystem = %v", got)
	}
}
