package certificate

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/certs/certstest"
	"orch.io/orch/components/orchlet/apiclient"
)

// maxLoadTime flags an input that makes loading crawl: a kubeconfig is tiny, so seconds mean a hang
// in the making, not a slow machine.
const maxLoadTime = 5 * time.Second

// FuzzOrchconfig feeds arbitrary bytes to the agent's kubeconfig loading, as --orchconfig (with
// arbitrary bytes in the client certificate file it may name, client.crt beside it) and as
// --bootstrap-kubeconfig: deciding whether to bootstrap, loading and building the agent's clients
// never panic or hang, and the --orchconfig written from a bootstrap file that loads reaches the
// same server with the same CA.
func FuzzOrchconfig(f *testing.F) {
	head := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:6443\"}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
	dir := f.TempDir()
	ca := certstest.NewCA(f, "ca")
	cert, _ := ca.Client(f, "system:node:n", "system:nodes").WriteFiles(f, dir, "client")
	pem, err := os.ReadFile(cert)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []struct{ config, pem string }{
		{head + "users: [{name: u, user: {token: abc}}]\n", ""},
		{head + "users: [{name: u, user: {client-certificate: client.crt, client-key: client.crt}}]\n", string(pem)},
		{head + "users: [{name: u, user: {client-certificate: client.crt, client-key: client.crt}}]\n", "not a certificate"},
		{"apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://[::1]:6443/prefix\", insecure-skip-tls-verify: true}}]\ncontexts: [{name: c, context: {cluster: c, user: u, namespace: n}}]\ncurrent-context: c\nusers: [{name: u, user: {username: a, password: b}}]\n", ""},
		{"apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://x\", certificate-authority-data: bm90IGEgY2VydA==}}]\ncurrent-context: missing\n", ""},
		{"{}", ""},
	} {
		f.Add([]byte(seed.config), []byte(seed.pem))
	}
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	f.Fuzz(func(t *testing.T, config, pem []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "orchlet.conf")
		if err := os.WriteFile(path, config, 0o600); err != nil {
			t.Fatal(err)
		}
		if len(pem) > 0 {
			if err := os.WriteFile(filepath.Join(dir, "client.crt"), pem, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		watchdog := time.AfterFunc(maxLoadTime, func() {
			panic(fmt.Sprintf("loading still running after %v on %q", maxLoadTime, config))
		})
		defer watchdog.Stop()
		if _, err := needsBootstrap(path, clk); err != nil {
			return
		}
		cfg, err := apiclient.LoadConfig(path)
		if err != nil {
			return
		}
		if _, err := apiclient.New(cfg, apiclient.Settings{}); err != nil {
			return
		}
		if _, err := NewClient(cfg); err != nil {
			return
		}
		// The file as a bootstrap kubeconfig: what the agent writes from it must load to the same
		// server and CA.
		out, pair := filepath.Join(dir, "out", "orchlet.conf"), filepath.Join(dir, "pair.pem")
		if err := os.WriteFile(pair, pem, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := writeKubeconfig(out, cfg, pair); err != nil {
			return
		}
		back, err := apiclient.LoadConfig(out)
		if err != nil {
			t.Fatalf("the --orchconfig written from %q does not load: %v", config, err)
		}
		if back.Host != cfg.Host || !bytes.Equal(back.CAData, cfg.CAData) || back.Insecure != cfg.Insecure || back.ServerName != cfg.ServerName {
			t.Fatalf("the --orchconfig written reaches %q (CA %d bytes, insecure %t, server name %q), the bootstrap file %q (CA %d bytes, insecure %t, server name %q)",
				back.Host, len(back.CAData), back.Insecure, back.ServerName, cfg.Host, len(cfg.CAData), cfg.Insecure, cfg.ServerName)
		}
	})
}
