package pods

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	fakescript "orch.io/orch/fakecri/script"
)

// hostResolvConf is a node's --resolv-conf: dns's tests read one in every detail.
const hostResolvConf = "nameserver 192.0.2.53\nnameserver 192.0.2.54\nsearch corp.example. lab.example .\n"

// TestResolvConfReadAtStart checks the sandbox of a Default pod gets what --resolv-conf held, and
// a missing file leaves pods the runtime's default rather than stopping the agent.
func TestResolvConfReadAtStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(path, []byte(hostResolvConf), 0o600); err != nil {
		t.Fatal(err)
	}
	pod := newPod("web", ctr("web", "nginx:1.27"))
	pod.Spec.DNSPolicy = corev1.DNSDefault
	h := newHarness(t, &fakescript.Script{}, config(func(c *v1beta1.OrchletConfiguration) { c.ResolverConfig = path }), nil)
	if got := h.m.sandboxConfig(pod, 0).DnsConfig; !slices.Equal(got.Servers, []string{"192.0.2.53", "192.0.2.54"}) || !slices.Equal(got.Searches, []string{"corp.example", "lab.example"}) {
		t.Errorf("dns from %s = %v", path, got)
	}
	h = newHarness(t, &fakescript.Script{}, config(func(c *v1beta1.OrchletConfiguration) { c.ResolverConfig = path + ".missing" }), nil)
	if got := h.m.sandboxConfig(pod, 0).DnsConfig; len(got.Servers)+len(got.Searches)+len(got.Options) > 0 {
		t.Errorf("dns without a readable --resolv-conf = %v, want empty", got)
	}
	// A node's injected filesystem (the simulator's) is read instead of the machine's.
	node := fstest.MapFS{"etc/resolv.conf": {Data: []byte("nameserver 198.51.100.1\nsearch node.example\n")}}
	h = newHarness(t, &fakescript.Script{}, config(func(c *v1beta1.OrchletConfiguration) { c.ResolverConfig = "/etc/resolv.conf" }), func(o *Options) { o.FS = node })
	if got := h.m.sandboxConfig(pod, 0).DnsConfig; !slices.Equal(got.Servers, []string{"198.51.100.1"}) || !slices.Equal(got.Searches, []string{"node.example"}) {
		t.Errorf("dns from the injected filesystem = %v", got)
	}
}
