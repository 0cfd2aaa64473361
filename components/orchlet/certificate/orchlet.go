package certificate

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
)

// The prefixes of the agent's certificates under --cert-dir, Kubernetes' kubelet-client and
// kubelet-server renamed: orchlet-client-current.pem links to the client pair in use.
const (
	ClientCertPrefix  = "orchlet-client"
	ServingCertPrefix = "orchlet-server"
)

// Bootstrap is where the agent's client certificate comes from and goes: --orchconfig,
// --bootstrap-kubeconfig and --cert-dir.
type Bootstrap struct {
	Clock clock.Clock
	// Orchconfig is the kubeconfig the agent connects with; Kubeconfig the one with bootstrap
	// credentials that may request a node client certificate.
	Orchconfig, Kubeconfig string
	CertDir                string
	Node                   string
}

// LoadClientCert writes Orchconfig with a client certificate obtained with the Kubeconfig
// credentials when it is absent or its certificate has expired, as the kubelet's LoadClientCert.
func (b Bootstrap) LoadClientCert(ctx context.Context) error {
	needed, err := needsBootstrap(b.Orchconfig, b.Clock)
	if err != nil || !needed {
		return err
	}
	return b.bootstrap(ctx)
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

// bootstrap requests a client certificate for the node with the bootstrap credentials, stores it
// under CertDir and writes Orchconfig to use it.
func (b Bootstrap) bootstrap(ctx context.Context) error {
	bootCfg, err := clientcmd.BuildConfigFromFlags("", b.Kubeconfig)
	if err != nil {
		return fmt.Errorf("--bootstrap-kubeconfig %s: %w", b.Kubeconfig, err)
	}
	client, err := NewClient(bootCfg)
	if err != nil {
		return fmt.Errorf("--bootstrap-kubeconfig %s: %w", b.Kubeconfig, err)
	}
	klog.InfoS("Using bootstrap kubeconfig to generate TLS client cert, key and kubeconfig file", "bootstrapKubeconfig", b.Kubeconfig, "orchconfig", b.Orchconfig)
	req := ClientRequest(b.Node)
	req.GenerateName = "node-csr-"
	klog.InfoS("Waiting for client certificate to be issued")
	certPEM, keyPEM, err := Obtain(ctx, client, req)
	if err != nil {
		return fmt.Errorf("--bootstrap-kubeconfig: requesting a client certificate: %w", err)
	}
	store := NewStore(b.CertDir, ClientCertPrefix, "", "", b.Clock)
	if _, err := store.Update(certPEM, keyPEM); err != nil {
		return fmt.Errorf("--cert-dir: %w", err)
	}
	return writeKubeconfig(b.Orchconfig, bootCfg, store.CurrentPath())
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

// ClientRequest is the node's client certificate request: CN system:node:<name>, O system:nodes,
// for an ECDSA key (no key encipherment), to the node client signer.
func ClientRequest(node string) Request {
	return Request{
		Template:     &x509.CertificateRequest{Subject: pkix.Name{CommonName: authz.NodeUserPrefix + node, Organization: []string{authz.NodesGroup}}},
		SignerName:   ClientSigner,
		Usages:       []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
		GenerateName: "csr-",
	}
}

// RotatingClient makes base present the client certificate of a manager that renews it
// (--rotate-certificates): the pair stored under CertDir or, before the first renewal, the files
// base names.
func (b Bootstrap) RotatingClient(base *rest.Config) (*rest.Config, *Manager, error) {
	store := NewStore(b.CertDir, ClientCertPrefix, base.CertFile, base.KeyFile, b.Clock)
	var cfg *rest.Config
	mgr, err := NewManager(ManagerOptions{
		Clock: b.Clock, Jitter: rand.Float64, Store: store, Logger: klog.Background(),
		Request: func() Request { return ClientRequest(b.Node) },
		Client:  func() (rest.Interface, error) { return NewClient(cfg) },
	})
	if err != nil {
		return nil, nil, fmt.Errorf("--rotate-certificates: %w", err)
	}
	if mgr.Current() == nil {
		return nil, nil, fmt.Errorf("--rotate-certificates: --orchconfig %s names no client certificate file to rotate (nor is one stored under --cert-dir %s)", b.Orchconfig, b.CertDir)
	}
	cfg, closeAll, err := ClientConfig(base, mgr.Current)
	if err != nil {
		return nil, nil, fmt.Errorf("--orchconfig: %w", err)
	}
	mgr.OnRotated(closeAll)
	return cfg, mgr, nil
}

// ServingManager requests the HTTPS server's certificate (--rotate-server-certificates) from the
// API server cfg reaches, signer orch.io/orchlet-serving, for the node's addresses, and renews it.
func (b Bootstrap) ServingManager(cfg *rest.Config, addrs []corev1.NodeAddress) (*Manager, error) {
	tmpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: authz.NodeUserPrefix + b.Node, Organization: []string{authz.NodesGroup}}}
	for _, a := range addrs {
		switch a.Type {
		case corev1.NodeHostName, corev1.NodeInternalDNS, corev1.NodeExternalDNS:
			tmpl.DNSNames = append(tmpl.DNSNames, a.Address)
		case corev1.NodeInternalIP, corev1.NodeExternalIP:
			tmpl.IPAddresses = append(tmpl.IPAddresses, net.ParseIP(a.Address))
		}
	}
	mgr, err := NewManager(ManagerOptions{
		Clock: b.Clock, Jitter: rand.Float64, Store: NewStore(b.CertDir, ServingCertPrefix, "", "", b.Clock), Logger: klog.Background(),
		Request: func() Request {
			return Request{Template: tmpl, SignerName: ServingSigner, GenerateName: "csr-",
				Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}}
		},
		Client: func() (rest.Interface, error) { return NewClient(cfg) },
	})
	if err != nil {
		return nil, fmt.Errorf("--rotate-server-certificates: %w", err)
	}
	return mgr, nil
}
