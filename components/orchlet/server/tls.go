package server

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"

	cliflag "k8s.io/component-base/cli/flag"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/certs"
)

// certBaseName names the agent's self-signed pair under --cert-dir: orchlet.crt and orchlet.key.
const certBaseName = "orchlet"

// servingTLS builds the HTTPS server's TLS configuration: the pair from --tls-cert-file and
// --tls-private-key-file or the self-signed pair under --cert-dir, --tls-min-version and
// --tls-cipher-suites (Go's names, as Kubernetes takes them), and, with --client-ca-file, a
// request for client certificates, which the X509 authenticator verifies against the file.
func servingTLS(cfg *v1beta1.OrchletConfiguration, deps Deps, clientCAs *x509.CertPool) (*tls.Config, error) {
	config, err := servingCertificate(cfg, deps)
	if err != nil {
		return nil, err
	}
	if cfg.TLSMinVersion != "" {
		v, err := cliflag.TLSVersion(cfg.TLSMinVersion)
		if err != nil {
			return nil, fmt.Errorf("server: --tls-min-version: %w", err)
		}
		config.MinVersion = v
	}
	if len(cfg.TLSCipherSuites) > 0 {
		suites, err := cliflag.TLSCipherSuites(cfg.TLSCipherSuites)
		if err != nil {
			return nil, fmt.Errorf("server: --tls-cipher-suites: %w", err)
		}
		config.CipherSuites = suites
		// Go's HTTP/2 server, like the kubelet's, refuses to serve below TLS 1.3 without one of
		// the suites HTTP/2 requires; say so now rather than fail once listening.
		if config.MinVersion < tls.VersionTLS13 && !slices.Contains(suites, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) &&
			!slices.Contains(suites, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256) {
			return nil, fmt.Errorf("server: --tls-cipher-suites must include TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 or TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, which HTTP/2 requires, unless --tls-min-version is VersionTLS13")
		}
	}
	if clientCAs != nil {
		config.ClientCAs = clientCAs
		config.ClientAuth = tls.RequestClientCert
	}
	return config, nil
}

// loadClientCAs reads the PEM bundle of --client-ca-file.
func loadClientCAs(path string) (*x509.CertPool, error) {
	pool, err := certs.LoadCAPool(path)
	if err != nil {
		return nil, fmt.Errorf("server: --client-ca-file: %w", err)
	}
	return pool, nil
}

// servingCertificate is the certificate part of the TLS configuration: the one requested from
// the API server with --rotate-server-certificates (the files are then not read, nor a
// self-signed pair made, as in the kubelet), otherwise the files or the self-signed pair.
func servingCertificate(cfg *v1beta1.OrchletConfiguration, deps Deps) (*tls.Config, error) {
	if current := deps.ServingCertificate; current != nil {
		return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := current(); c != nil {
				return c, nil
			}
			return nil, errors.New("no serving certificate available for the orchlet")
		}}, nil
	}
	certFile, keyFile, err := certs.ServingFiles(cfg.TLSCertFile, cfg.TLSPrivateKeyFile, deps.CertDir, certBaseName, []string{deps.NodeName}, deps.Clock)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	pair, err := certs.LoadServing(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return certs.TLSConfig(pair), nil
}
