package certificate

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/certs/certstest"
)

// --orchconfig is bootstrapped when absent or when its client certificate is unreadable or has
// expired on the agent's clock; one with a token or a current certificate is kept.
func TestNeedsBootstrap(t *testing.T) {
	dir := t.TempDir()
	clk := clock.NewMock()
	kubeconfig := func(name, user string) string {
		path := filepath.Join(dir, name)
		certstest.WriteFile(t, path, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:6443\"}}]\n"+
			"users: [{name: u, user: "+user+"}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"))
		return path
	}
	cert, key := certstest.NewCA(t, "ca").Client(t, "system:node:n", "system:nodes").WriteFiles(t, dir, "client")
	garbage := filepath.Join(dir, "garbage.crt")
	certstest.WriteFile(t, garbage, []byte("not a certificate"))
	now, expired := time.Now(), time.Date(2201, 1, 1, 0, 0, 0, 0, time.UTC) // certstest's end in 2200
	for _, tc := range []struct {
		name, path string
		at         time.Time
		want       bool
	}{
		{"absent", filepath.Join(dir, "none.conf"), now, true},
		{"a token", kubeconfig("token.conf", "{token: abc}"), now, false},
		{"a current certificate", kubeconfig("cert.conf", "{client-certificate: "+cert+", client-key: "+key+"}"), now, false},
		{"an unreadable certificate", kubeconfig("garbage.conf", "{client-certificate: "+garbage+", client-key: "+key+"}"), now, true},
		{"an expired certificate", kubeconfig("old.conf", "{client-certificate: "+cert+", client-key: "+key+"}"), expired, true},
	} {
		clk.Set(tc.at)
		got, err := needsBootstrap(tc.path, clk)
		if err != nil || got != tc.want {
			t.Errorf("%s: needsBootstrap = %t, %v; want %t", tc.name, got, err, tc.want)
		}
	}
}
