package server

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	"orch.io/orch/components/certs"
)

// handshake dials the HTTPS server with client limits and reports the negotiated state.
func handshake(t *testing.T, addr, certDir string, client *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	pemBytes, err := os.ReadFile(filepath.Join(certDir, "orchlet.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	client.RootCAs, client.ServerName = pool, "127.0.0.1"
	conn, err := tls.Dial("tcp", addr, client)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer conn.Close()
	return conn.ConnectionState(), nil
}

func TestTLSMinVersion(t *testing.T) {
	tests := []struct {
		name       string
		minVersion string
		clientMax  uint16
		wantOK     bool
	}{
		{"default refuses TLS 1.1", "", tls.VersionTLS11, false},
		{"default accepts TLS 1.2", "", tls.VersionTLS12, true},
		{"VersionTLS13 refuses TLS 1.2", "VersionTLS13", tls.VersionTLS12, false},
		{"VersionTLS13 accepts TLS 1.3", "VersionTLS13", tls.VersionTLS13, true},
		{"VersionTLS12 accepts TLS 1.2", "VersionTLS12", tls.VersionTLS12, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.TLSMinVersion = tt.minVersion
			deps := testDeps(t, newClock())
			s := start(t, cfg, deps)
			state, err := handshake(t, s.Addrs().HTTPS, deps.CertDir, &tls.Config{MinVersion: tls.VersionTLS10, MaxVersion: tt.clientMax})
			if (err == nil) != tt.wantOK {
				t.Fatalf("handshake with TLS <= %x: %v, want ok=%v", tt.clientMax, err, tt.wantOK)
			}
			if err == nil && state.Version != tt.clientMax {
				t.Errorf("negotiated %x, want %x", state.Version, tt.clientMax)
			}
		})
	}
}

func TestTLSCipherSuites(t *testing.T) {
	const chosen, other = tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
	tests := []struct {
		name        string
		suites      []string
		clientOffer []uint16
		wantSuite   uint16 // 0: the handshake fails
	}{
		{"option restricts the suites", []string{tls.CipherSuiteName(chosen)}, nil, chosen},
		{"a suite outside the option is refused", []string{tls.CipherSuiteName(chosen)}, []uint16{other}, 0},
		{"without the option the same suite is accepted", nil, []uint16{other}, other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.TLSCipherSuites = tt.suites
			deps := testDeps(t, newClock())
			s := start(t, cfg, deps)
			// Cipher suites are configurable for TLS 1.2 and below only.
			state, err := handshake(t, s.Addrs().HTTPS, deps.CertDir, &tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: tt.clientOffer})
			if tt.wantSuite == 0 {
				if err == nil {
					t.Fatalf("handshake succeeded with %s, want a refusal", tls.CipherSuiteName(state.CipherSuite))
				}
				return
			}
			if err != nil || state.CipherSuite != tt.wantSuite {
				t.Fatalf("handshake: %v, suite %s; want %s", err, tls.CipherSuiteName(state.CipherSuite), tls.CipherSuiteName(tt.wantSuite))
			}
		})
	}
}

func TestServingCertificate(t *testing.T) {
	given := t.TempDir()
	certFile, keyFile, err := certs.EnsureSelfSigned(given, "given", []string{"127.0.0.1"}, newClock())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		certFile      string
		keyFile       string
		wantServed    string // file holding the certificate the server must present
		wantInCertDir bool
	}{
		{name: "self-signed pair in --cert-dir", wantInCertDir: true},
		{name: "--tls-cert-file and --tls-private-key-file", certFile: certFile, keyFile: keyFile, wantServed: certFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.TLSCertFile, cfg.TLSPrivateKeyFile = tt.certFile, tt.keyFile
			deps := testDeps(t, newClock())
			s := start(t, cfg, deps)
			generated := filepath.Join(deps.CertDir, "orchlet.crt")
			_, statErr := os.Stat(generated)
			if (statErr == nil) != tt.wantInCertDir {
				t.Fatalf("orchlet.crt in --cert-dir: %v, want present=%v", statErr, tt.wantInCertDir)
			}
			served := tt.wantServed
			if served == "" {
				served = generated
			}
			want, err := certs.LoadServing(served, map[string]string{generated: filepath.Join(deps.CertDir, "orchlet.key"), certFile: keyFile}[served])
			if err != nil {
				t.Fatal(err)
			}
			conn, err := tls.Dial("tcp", s.Addrs().HTTPS, &tls.Config{InsecureSkipVerify: true})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if got := conn.ConnectionState().PeerCertificates[0].Raw; !bytes.Equal(got, want.Leaf.Raw) {
				t.Errorf("served certificate %q, want the one in %s", conn.ConnectionState().PeerCertificates[0].Subject, served)
			}
		})
	}
}
