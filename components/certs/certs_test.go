package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"io/fs"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
)

func mockClock(t time.Time) *clock.Mock {
	c := clock.NewMock()
	c.Set(t)
	return c
}

func readPair(t *testing.T, certFile, keyFile string) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err = os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

func TestGeneratedPairServesEverySAN(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	hosts := []string{"node-1.example.org", "10.0.0.5", "[fd00::7]", "Orch-API"}
	certFile, keyFile, err := EnsureSelfSigned(dir, "apiserver", hosts, clock.New())
	if err != nil {
		t.Fatal(err)
	}
	if certFile != filepath.Join(dir, "apiserver.crt") || keyFile != filepath.Join(dir, "apiserver.key") {
		t.Fatalf("files = %q, %q", certFile, keyFile)
	}
	cert, err := LoadServing(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok"))
	}))
	srv.TLS = TLSConfig(cert)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the rejected names fail their handshakes
	srv.StartTLS()
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	_, port, _ := net.SplitHostPort(addr)

	certPEM, _ := readPair(t, certFile, keyFile)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(certPEM) {
		t.Fatal("no certificate in the generated file")
	}
	// Every name is dialled at the test server; the TLS client verifies the URL's host.
	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		},
	}}
	get := func(host string) error {
		resp, err := client.Get("https://" + net.JoinHostPort(host, port) + "/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d", host, resp.StatusCode)
		}
		return nil
	}
	for _, host := range []string{"node-1.example.org", "NODE-1.example.org", "10.0.0.5", "fd00::7", "orch-api",
		"localhost", "127.0.0.1", "::1"} {
		if err := get(host); err != nil {
			t.Errorf("GET via %s: %v", host, err)
		}
	}
	for _, host := range []string{"other.example.org", "10.0.0.6"} {
		var verr *tls.CertificateVerificationError
		if err := get(host); !errors.As(err, &verr) {
			t.Errorf("GET via %s = %v, want a certificate verification error", host, err)
		}
	}

	leaf := cert.Leaf
	if leaf.IsCA || leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0 ||
		len(leaf.ExtKeyUsage) != 1 || leaf.ExtKeyUsage[0] != x509.ExtKeyUsageServerAuth {
		t.Errorf("usage: IsCA=%v KeyUsage=%v ExtKeyUsage=%v", leaf.IsCA, leaf.KeyUsage, leaf.ExtKeyUsage)
	}
	if !strings.HasPrefix(leaf.Subject.CommonName, "node-1.example.org@") {
		t.Errorf("CommonName = %q", leaf.Subject.CommonName)
	}
	if got := strings.Join(leaf.DNSNames, ","); got != "node-1.example.org,orch-api,localhost" {
		t.Errorf("DNSNames = %s", got)
	}
	if len(leaf.IPAddresses) != 4 {
		t.Errorf("IPAddresses = %v, want 10.0.0.5, fd00::7, 127.0.0.1, ::1", leaf.IPAddresses)
	}
}

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "pki")
	certFile, keyFile, err := EnsureSelfSigned(dir, "kubelet", nil, clock.New())
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]fs.FileMode{dir: 0o700 | fs.ModeDir, keyFile: 0o600, certFile: 0o644} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("directory holds %d entries, want the 2 files (no temporaries)", len(entries))
	}
}

func TestExistingPairIsReused(t *testing.T) {
	dir := t.TempDir()
	clk := mockClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	certFile, keyFile, err := EnsureSelfSigned(dir, "kubelet", []string{"a.example"}, clk)
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM := readPair(t, certFile, keyFile)
	for i, hosts := range [][]string{{"a.example"}, {"b.example"}, nil} {
		clk.Add(48 * time.Hour)
		c2, k2, err := EnsureSelfSigned(dir, "kubelet", hosts, clk)
		if err != nil {
			t.Fatalf("call %d: %v", i+2, err)
		}
		if c2 != certFile || k2 != keyFile {
			t.Fatalf("call %d: files %q, %q", i+2, c2, k2)
		}
		if c, k := readPair(t, certFile, keyFile); !bytes.Equal(c, certPEM) || !bytes.Equal(k, keyPEM) {
			t.Fatalf("call %d regenerated the pair", i+2)
		}
	}
	// Another base name in the same directory is a separate pair.
	c3, _, err := EnsureSelfSigned(dir, "apiserver", nil, clk)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := os.ReadFile(c3); bytes.Equal(c, certPEM) {
		t.Error("apiserver pair equals kubelet pair")
	}
}

func TestClockControlsValidity(t *testing.T) {
	now := time.Date(2031, 6, 7, 8, 9, 10, 0, time.UTC)
	certFile, keyFile, err := EnsureSelfSigned(t.TempDir(), "kubelet", nil, mockClock(now))
	if err != nil {
		t.Fatal(err)
	}
	cert, err := LoadServing(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	wantFrom := time.Date(2031, 6, 7, 7, 9, 10, 0, time.UTC)
	if !cert.Leaf.NotBefore.Equal(wantFrom) {
		t.Errorf("NotBefore = %v, want %v", cert.Leaf.NotBefore, wantFrom)
	}
	if want := wantFrom.Add(365 * 24 * time.Hour); !cert.Leaf.NotAfter.Equal(want) {
		t.Errorf("NotAfter = %v, want %v", cert.Leaf.NotAfter, want)
	}
	if cn := cert.Leaf.Subject.CommonName; cn != "localhost@1938586150" {
		t.Errorf("CommonName = %q, want localhost@%d", cn, now.Unix())
	}
}

func TestBrokenPairsAreReported(t *testing.T) {
	// A valid pair from another directory, to mismatch keys with.
	otherCert, otherKey, err := EnsureSelfSigned(t.TempDir(), "other", nil, clock.New())
	if err != nil {
		t.Fatal(err)
	}
	otherKeyPEM, _ := os.ReadFile(otherKey)
	otherCertPEM, _ := os.ReadFile(otherCert)

	tests := []struct {
		name   string
		break_ func(certFile, keyFile string)
		want   []string // substrings; "{CERT}" and "{KEY}" stand for the paths
	}{
		{"corrupt certificate", func(c, k string) { os.WriteFile(c, []byte("garbage"), 0o644) },
			[]string{"{CERT}", "no PEM CERTIFICATE block"}},
		{"certificate block that does not parse", func(c, k string) {
			os.WriteFile(c, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), 0o644)
		}, []string{"{CERT}", "x509"}},
		{"corrupt key", func(c, k string) { os.WriteFile(k, []byte("garbage"), 0o600) },
			[]string{"{KEY}", "no PEM PRIVATE KEY block"}},
		{"key block that does not parse", func(c, k string) {
			os.WriteFile(k, []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n"), 0o600)
		}, []string{"{KEY}", "parsing EC PRIVATE KEY"}},
		{"key of another pair", func(c, k string) { os.WriteFile(k, otherKeyPEM, 0o600) },
			[]string{"{KEY}", "does not match", "{CERT}"}},
		{"certificate of another pair", func(c, k string) { os.WriteFile(c, otherCertPEM, 0o644) },
			[]string{"{KEY}", "does not match", "{CERT}"}},
		{"key missing", func(c, k string) { os.Remove(k) },
			[]string{"{CERT}", "{KEY}", "must be supplied as a pair"}},
		{"certificate missing", func(c, k string) { os.Remove(c) },
			[]string{"{CERT}", "{KEY}", "must be supplied as a pair"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			certFile, keyFile, err := EnsureSelfSigned(dir, "kubelet", nil, clock.New())
			if err != nil {
				t.Fatal(err)
			}
			tt.break_(certFile, keyFile)
			before := snapshot(t, dir)
			_, _, err = EnsureSelfSigned(dir, "kubelet", nil, clock.New())
			if err == nil {
				t.Fatal("EnsureSelfSigned accepted a broken pair")
			}
			for _, w := range tt.want {
				w = strings.NewReplacer("{CERT}", certFile, "{KEY}", keyFile).Replace(w)
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if after := snapshot(t, dir); after != before {
				t.Errorf("directory changed:\n%s\nwant\n%s", after, before)
			}
		})
	}
}

func snapshot(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		b.WriteString(e.Name() + ":" + string(data) + "\n")
	}
	return b.String()
}

func TestEnsureSelfSignedArguments(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		dir      string
		baseName string
		hosts    []string
		want     string
	}{
		{"empty dir", "", "kubelet", nil, "directory is empty"},
		{"empty base name", dir, "", nil, `base name ""`},
		{"base name with a slash", dir, "a/b", nil, `base name "a/b"`},
		{"host with a port", dir, "kubelet", []string{"node:10250"}, `host "node:10250"`},
		{"host with a space", dir, "kubelet", []string{"my node"}, `host "my node"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := EnsureSelfSigned(tt.dir, tt.baseName, tt.hosts, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("invalid arguments wrote %d files", len(entries))
	}
}

// A directory that cannot be created is reported, not papered over; a regular file in the path
// stops even root, so the test means the same everywhere.
func TestEnsureSelfSignedUncreatableDir(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := EnsureSelfSigned(filepath.Join(blocker, "pki"), "kubelet", nil, nil)
	if err == nil || !strings.Contains(err.Error(), blocker) {
		t.Errorf("err = %v, want an error naming %s", err, blocker)
	}
}

func TestLoadServingErrors(t *testing.T) {
	certFile, keyFile, err := EnsureSelfSigned(t.TempDir(), "kubelet", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.crt")
	tests := []struct {
		name       string
		cert, key  string
		notExist   bool
		wantSubstr string
	}{
		{"missing certificate", missing, keyFile, true, missing},
		{"missing key", certFile, missing, true, missing},
		{"no certificate given", "", keyFile, false, "must both be given"},
		{"no key given", certFile, "", false, "must both be given"},
		{"files swapped", keyFile, certFile, false, keyFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadServing(tt.cert, tt.key)
			if err == nil {
				t.Fatal("LoadServing succeeded")
			}
			if errors.Is(err, fs.ErrNotExist) != tt.notExist {
				t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v (err %v)", !tt.notExist, tt.notExist, err)
			}
			if !strings.Contains(err.Error(), tt.wantSubstr) {
				t.Errorf("error %q does not contain %q", err, tt.wantSubstr)
			}
		})
	}
}

// TestLoadServingChain checks that intermediates after the leaf are kept, as --tls-cert-file allows.
func TestLoadServingChain(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, err := EnsureSelfSigned(dir, "kubelet", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := EnsureSelfSigned(dir, "other", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	leafPEM, _ := os.ReadFile(certFile)
	interPEM, _ := os.ReadFile(other)
	if err := os.WriteFile(certFile, append(leafPEM, interPEM...), 0o644); err != nil {
		t.Fatal(err)
	}
	cert, err := LoadServing(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(cert.Certificate) != 2 {
		t.Errorf("chain length %d, want 2", len(cert.Certificate))
	}
}

func TestServingFiles(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name      string
		cert, key string
		wantCert  string
		wantKey   string
		wantErr   string
	}{
		{"both given: used as they are", "/etc/x.crt", "/etc/x.key", "/etc/x.crt", "/etc/x.key", ""},
		{"neither: self-signed in cert dir", "", "", filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key"), ""},
		{"certificate only", "/etc/x.crt", "", "", "", "--tls-cert-file and --tls-private-key-file"},
		{"key only", "", "/etc/x.key", "", "", "--tls-cert-file and --tls-private-key-file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, k, err := ServingFiles(tt.cert, tt.key, dir, "kubelet", nil, nil)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || c != tt.wantCert || k != tt.wantKey {
				t.Errorf("ServingFiles = %q, %q, %v; want %q, %q", c, k, err, tt.wantCert, tt.wantKey)
			}
		})
	}
}

func TestConcurrentEnsure(t *testing.T) {
	dir := t.TempDir()
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			c, k, err := EnsureSelfSigned(dir, "kubelet", nil, nil)
			if err == nil {
				_, err = LoadServing(c, k)
			}
			errs <- err
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
