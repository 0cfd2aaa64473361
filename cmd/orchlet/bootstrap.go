package main

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"

	"github.com/benbjohnson/clock"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/klog/v2"

	"orch.io/orch/components/authz"
	"orch.io/orch/components/orchlet/apiclient"
	"orch.io/orch/components/orchlet/certificate"
	"orch.io/orch/components/orchlet/nodestatus"
	"orch.io/orch/components/orchlet/options"
)

// The prefixes of the agent's certificates under --cert-dir, Kubernetes' kubelet-client and
// kubelet-server renamed: orchlet-client-current.pem links to the client pair in use.
const (
	clientCertPrefix  = "orchlet-client"
	servingCertPrefix = "orchlet-server"
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

// loadClients connects to the API server with --orchconfig, first writing it with a client
// certificate obtained through --bootstrap-kubeconfig when it is absent or its certificate has
// expired; with --rotate-certificates the client certificate is renewed in use.
func loadClients(ctx context.Context, o *options.Options, clk clock.Clock, node string) (*apiclient.Clients, *certificate.Manager, error) {
	c := o.Config
	path := o.Flags.Orchconfig
	if o.Flags.BootstrapKubeconfig != "" {
		needed, err := needsBootstrap(path, clk)
		if err != nil {
			return nil, nil, err
		}
		if needed {
			if err := bootstrap(ctx, o, clk, node); err != nil {
				return nil, nil, err
			}
		}
	}
	cfg, err := apiclient.LoadConfig(path)
	if err != nil {
		return nil, nil, err
	}
	var mgr *certificate.Manager
	if c.RotateCertificates {
		if cfg, mgr, err = rotatingClient(o, clk, node, cfg); err != nil {
			return nil, nil, err
		}
	}
	clients, err := apiclient.New(cfg, apiclient.Settings{
		QPS: float32(c.KubeAPIQPS), Burst: int(c.KubeAPIBurst), ContentType: c.ContentType, UserAgent: "orchlet/" + o.Version.GitVersion,
	})
	return clients, mgr, err
}

// needsBootstrap tells whether the --orchconfig file is absent, or names a client certificate
// that is missing or expired, as the kubelet's isClientConfigStillValid does.
func needsBootstrap(path string, clk clock.Clock) (bool, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return true, nil
	} else if err != nil {
		return false, fmt.Errorf("--orchconfig %s: %w", path, err)
	}
	cfg, err := apiclient.LoadConfig(path)
	if err != nil {
		return false, err
	}
	if cfg.CertFile == "" && len(cfg.CertData) == 0 {
		return false, nil // token or other credentials: nothing to renew
	}
	certs, err := clientCertificates(cfg)
	if err != nil {
		klog.InfoS("Unable to read the existing client certificate; bootstrapping again", "path", cfg.CertFile, "err", err)
		return true, nil
	}
	for _, cert := range certs {
		if clk.Now().After(cert.NotAfter) {
			klog.InfoS("Part of the existing bootstrap client certificate is expired", "path", path, "expiration", cert.NotAfter)
			return true, nil
		}
	}
	return false, nil
}

func clientCertificates(cfg *rest.Config) ([]*x509.Certificate, error) {
	data := cfg.CertData
	if len(data) == 0 {
		var err error
		if data, err = os.ReadFile(cfg.CertFile); err != nil {
			return nil, err
		}
	}
	return certutil.ParseCertsPEM(data)
}

// bootstrap requests a client certificate for node with the --bootstrap-kubeconfig credentials,
// stores it under --cert-dir and writes --orchconfig to use it, as the kubelet's LoadClientCert.
func bootstrap(ctx context.Context, o *options.Options, clk clock.Clock, node string) error {
	bootCfg, err := clientcmd.BuildConfigFromFlags("", o.Flags.BootstrapKubeconfig)
	if err != nil {
		return fmt.Errorf("--bootstrap-kubeconfig %s: %w", o.Flags.BootstrapKubeconfig, err)
	}
	client, err := certificate.NewClient(bootCfg)
	if err != nil {
		return fmt.Errorf("--bootstrap-kubeconfig %s: %w", o.Flags.BootstrapKubeconfig, err)
	}
	klog.InfoS("Using bootstrap kubeconfig to generate TLS client cert, key and kubeconfig file", "bootstrapKubeconfig", o.Flags.BootstrapKubeconfig, "orchconfig", o.Flags.Orchconfig)
	req := clientRequest(node)
	req.GenerateName = "node-csr-"
	klog.InfoS("Waiting for client certificate to be issued")
	certPEM, keyPEM, err := certificate.Obtain(ctx, client, req)
	if err != nil {
		return fmt.Errorf("--bootstrap-kubeconfig: requesting a client certificate: %w", err)
	}
	store := certificate.NewStore(o.Flags.CertDir, clientCertPrefix, "", "", clk)
	if _, err := store.Update(certPEM, keyPEM); err != nil {
		return fmt.Errorf("--cert-dir: %w", err)
	}
	return writeKubeconfig(o.Flags.Orchconfig, bootCfg, store.CurrentPath())
}

// writeKubeconfig writes the kubelet's bootstrapped kubeconfig: the bootstrap file's server and
// CA, and the stored pair as client certificate and key.
func writeKubeconfig(path string, boot *rest.Config, pair string) error {
	ca := boot.CAFile
	if ca != "" {
		if abs, err := filepath.Abs(ca); err == nil {
			ca = abs
		}
	}
	cfg := clientcmdapi.Config{
		Clusters: map[string]*clientcmdapi.Cluster{"default-cluster": {
			Server: boot.Host, InsecureSkipTLSVerify: boot.Insecure, TLSServerName: boot.ServerName,
			CertificateAuthority: ca, CertificateAuthorityData: boot.CAData,
		}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"default-auth": {ClientCertificate: pair, ClientKey: pair}},
		Contexts:       map[string]*clientcmdapi.Context{"default-context": {Cluster: "default-cluster", AuthInfo: "default-auth", Namespace: "default"}},
		CurrentContext: "default-context",
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("--orchconfig %s: %w", path, err)
	}
	if err := clientcmd.WriteToFile(cfg, path); err != nil {
		return fmt.Errorf("--orchconfig %s: %w", path, err)
	}
	return nil
}

// clientRequest is the node's client certificate request: CN system:node:<name>, O system:nodes,
// for an ECDSA key (no key encipherment), to the node client signer.
func clientRequest(node string) certificate.Request {
	return certificate.Request{
		Template:     &x509.CertificateRequest{Subject: pkix.Name{CommonName: authz.NodeUserPrefix + node, Organization: []string{authz.NodesGroup}}},
		SignerName:   certificate.ClientSigner,
		Usages:       []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		GenerateName: "csr-",
	}
}

// rotatingClient makes cfg present the client certificate of a manager that renews it; the
// stored pair or, before the first renewal, the files of --orchconfig.
func rotatingClient(o *options.Options, clk clock.Clock, node string, base *rest.Config) (*rest.Config, *certificate.Manager, error) {
	store := certificate.NewStore(o.Flags.CertDir, clientCertPrefix, base.CertFile, base.KeyFile, clk)
	var cfg *rest.Config
	mgr, err := certificate.NewManager(certificate.ManagerOptions{
		Clock: clk, Jitter: rand.Float64, Store: store, Logger: klog.Background(),
		Request: func() certificate.Request { return clientRequest(node) },
		Client:  func() (rest.Interface, error) { return certificate.NewClient(cfg) },
	})
	if err != nil {
		return nil, nil, fmt.Errorf("--rotate-certificates: %w", err)
	}
	if mgr.Current() == nil {
		return nil, nil, fmt.Errorf("--rotate-certificates: --orchconfig %s names no client certificate file to rotate (nor is one stored under --cert-dir %s)", o.Flags.Orchconfig, o.Flags.CertDir)
	}
	cfg, closeAll, err := certificate.ClientConfig(base, mgr.Current)
	if err != nil {
		return nil, nil, fmt.Errorf("--orchconfig: %w", err)
	}
	mgr.OnRotated(closeAll)
	return cfg, mgr, nil
}

// servingManager requests the HTTPS server's certificate from the API server (signer
// orch.io/orchlet-serving) for the node's addresses, and renews it.
func servingManager(o *options.Options, clk clock.Clock, clients *apiclient.Clients, node string) (*certificate.Manager, error) {
	addrs, err := nodestatus.Addresses(o.Flags.NodeIP, node)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: authz.NodeUserPrefix + node, Organization: []string{authz.NodesGroup}}}
	for _, a := range addrs {
		switch a.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			tmpl.DNSNames = append(tmpl.DNSNames, a.Address)
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(a.Address))
		}
	}
	mgr, err := certificate.NewManager(certificate.ManagerOptions{
		Clock: clk, Jitter: rand.Float64, Store: certificate.NewStore(o.Flags.CertDir, servingCertPrefix, "", "", clk), Logger: klog.Background(),
		Request: func() certificate.Request {
			return certificate.Request{Template: tmpl, SignerName: certificate.ServingSigner, GenerateName: "csr-",
				Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}}
		},
		Client: func() (rest.Interface, error) { return certificate.NewClient(clients.Config) },
	})
	if err != nil {
		return nil, fmt.Errorf("--rotate-server-certificates: %w", err)
	}
	return mgr, nil
}
