package dns

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

type event struct{ kind, reason, note string }

type recorder struct{ all []event }

func (r *recorder) Eventf(_ *corev1.ObjectReference, eventType, reason, _, format string, args ...any) {
	r.all = append(r.all, event{kind: eventType, reason: reason, note: fmt.Sprintf(format, args...)})
}

func (r *recorder) reasons(reason string) []event {
	var out []event
	for _, e := range r.all {
		if e.reason == reason {
			out = append(out, e)
		}
	}
	return out
}

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
			rec := &recorder{}
			resolvConf := ""
			if tc.resolvConf != "" {
				resolvConf = "/etc/resolv.conf"
			}
			m := New(rec, tc.dns, tc.domain, resolvConf, []byte(tc.resolvConf))
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}}
			pod.Spec.DNSPolicy, pod.Spec.HostNetwork, pod.Spec.DNSConfig = tc.policy, tc.hostNetwork, tc.podDNS
			got := m.PodDNS(pod)
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
