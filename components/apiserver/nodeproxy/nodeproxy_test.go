package nodeproxy

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func node(port int32, addrs ...corev1.NodeAddress) *corev1.Node {
	n := &corev1.Node{}
	n.Status.Addresses = addrs
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = port
	return n
}

func TestLocation(t *testing.T) {
	internal := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}
	hostname := corev1.NodeAddress{Type: corev1.NodeHostName, Address: "node-a"}
	external := corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.9"}
	v6 := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00::5"}
	for _, tc := range []struct {
		name  string
		types []corev1.NodeAddressType
		node  *corev1.Node
		want  string
	}{
		{"default order: the hostname first", nil, node(10250, internal, hostname), "https://node-a:10250/containerLogs/ns/p/c?tailLines=5"},
		{"the configured order", []corev1.NodeAddressType{corev1.NodeExternalIP, corev1.NodeInternalIP}, node(10250, internal, external), "https://203.0.113.9:10250/containerLogs/ns/p/c?tailLines=5"},
		{"a later type when the first is missing", []corev1.NodeAddressType{corev1.NodeExternalIP, corev1.NodeInternalIP}, node(4443, internal), "https://10.0.0.5:4443/containerLogs/ns/p/c?tailLines=5"},
		{"no port in the status: the default", nil, node(0, internal), "https://10.0.0.5:10250/containerLogs/ns/p/c?tailLines=5"},
		{"IPv6", nil, node(10250, v6), "https://[fd00::5]:10250/containerLogs/ns/p/c?tailLines=5"},
	} {
		c, err := New(Config{PreferredAddressTypes: tc.types})
		if err != nil {
			t.Fatal(err)
		}
		u, err := c.Location(tc.node, "/containerLogs/ns/p/c", url.Values{"tailLines": {"5"}})
		if err != nil || u.String() != tc.want {
			t.Errorf("%s: %v, %v; want %s", tc.name, u, err, tc.want)
		}
	}
	c, _ := New(Config{PreferredAddressTypes: []corev1.NodeAddressType{corev1.NodeExternalIP}})
	if _, err := c.Location(node(10250, internal), "/pods", nil); err == nil || err.Error() != "no preferred addresses found; known addresses: [InternalIP:10.0.0.5]" {
		t.Errorf("no address of a preferred type: %v", err)
	}
}

func TestConfigRefused(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.crt")
	os.WriteFile(notPEM, []byte("not a certificate"), 0o600)
	for _, tc := range []struct {
		name string
		c    Config
		want string
	}{
		{"an unknown address type", Config{PreferredAddressTypes: []corev1.NodeAddressType{"Hostname", "PublicIP"}}, `--orchlet-preferred-address-types: unknown address type "PublicIP"`},
		{"a certificate without its key", Config{CertFile: "a.crt"}, "--orchlet-client-certificate and --orchlet-client-key must be given together"},
		{"an unreadable key pair", Config{CertFile: filepath.Join(dir, "none.crt"), KeyFile: filepath.Join(dir, "none.key")}, "--orchlet-client-certificate, --orchlet-client-key:"},
		{"a CA file without a certificate", Config{CAFile: notPEM}, "--orchlet-certificate-authority: no certificate in"},
		{"a missing CA file", Config{CAFile: filepath.Join(dir, "missing.crt")}, "--orchlet-certificate-authority:"},
		{"a negative timeout", Config{Timeout: -1}, "--orchlet-timeout:"},
	} {
		if _, err := New(tc.c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	c, err := New(Config{})
	if err != nil || !c.Transport().TLSClientConfig.InsecureSkipVerify {
		t.Errorf("without a CA the serving certificate is not verified: %v", err)
	}
}
