package app

import (
	"context"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/orchlet/apiclient"
	"orch.io/orch/components/orchlet/certificate"
	"orch.io/orch/components/orchlet/options"
)

// certManagers are the certificates the agent keeps current; either may be nil.
type certManagers struct {
	client, serving *certificate.Manager
}

// run renews the certificates until ctx ends.
func (m certManagers) run(ctx context.Context) {
	for _, mgr := range []*certificate.Manager{m.client, m.serving} {
		if mgr != nil {
			go mgr.Run(ctx)
		}
	}
}

// certBootstrap is where the node's certificates come from and go.
func certBootstrap(o *options.Options, clk clock.Clock, node string) certificate.Bootstrap {
	return certificate.Bootstrap{Clock: clk, Orchconfig: o.Flags.Orchconfig, Kubeconfig: o.Flags.BootstrapKubeconfig, CertDir: o.Flags.CertDir, Node: node}
}

// loadClients connects to the API server with --orchconfig, first writing it with a client
// certificate obtained through --bootstrap-kubeconfig when it is absent or its certificate has
// expired; with --rotate-certificates the client certificate is renewed in use.
func loadClients(ctx context.Context, o *options.Options, clk clock.Clock, node string) (*apiclient.Clients, *certificate.Manager, error) {
	c := o.Config
	b := certBootstrap(o, clk, node)
	if b.Kubeconfig != "" {
		if err := b.LoadClientCert(ctx); err != nil {
			return nil, nil, err
		}
	}
	cfg, err := apiclient.LoadConfig(b.Orchconfig)
	if err != nil {
		return nil, nil, err
	}
	var mgr *certificate.Manager
	if c.RotateCertificates {
		if cfg, mgr, err = b.RotatingClient(cfg); err != nil {
			return nil, nil, err
		}
	}
	clients, err := apiclient.New(cfg, apiclient.Settings{
		QPS: float32(c.KubeAPIQPS), Burst: int(c.KubeAPIBurst), ContentType: c.ContentType, UserAgent: "orchlet/" + o.Version.GitVersion,
	})
	return clients, mgr, err
}
