package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

const (
	// Validity is how long a generated certificate is valid, counted from its NotBefore.
	Validity = 365 * 24 * time.Hour
	// Backdate is how far before the clock's time a generated certificate becomes valid, to
	// tolerate clients whose clocks are slightly behind.
	Backdate = time.Hour
)

// ensureMu serialises EnsureSelfSigned within the process, so that two callers cannot interleave
// and leave a certificate and a key from different pairs.
var ensureMu sync.Mutex

// EnsureSelfSigned returns the paths <dir>/<baseName>.crt and <dir>/<baseName>.key (the kubelet
// uses baseName "kubelet", the API server "apiserver"), generating the pair first if neither file
// exists.
//
// An existing pair is reused as it is when both files parse and the key matches the certificate;
// otherwise the error names the file and nothing is overwritten. When only one of the two files
// exists the pair is reported as incomplete, as Kubernetes does.
//
// A generated pair is a self-signed ECDSA P-256 serving certificate for hosts (IP addresses as IP
// SANs, other names as DNS SANs) plus localhost, 127.0.0.1 and ::1, valid from clk.Now()-Backdate
// for Validity. Its common name is "<first host>@<unix time>" as Kubernetes names it. dir is created
// with mode 0700 if missing; the key is written with mode 0600 and the certificate 0644, each to a
// temporary file renamed into place. A nil clk is the real clock.
func EnsureSelfSigned(dir, baseName string, hosts []string, clk clock.Clock) (certFile, keyFile string, err error) {
	if dir == "" {
		return "", "", errors.New("certs: certificate directory is empty")
	}
	if baseName == "" || baseName == "." || baseName == ".." || strings.ContainsAny(baseName, `/\`) {
		return "", "", fmt.Errorf("certs: invalid certificate base name %q", baseName)
	}
	if clk == nil {
		clk = clock.New()
	}
	first, ips, names, err := sans(hosts)
	if err != nil {
		return "", "", err
	}
	certFile = filepath.Join(dir, baseName+".crt")
	keyFile = filepath.Join(dir, baseName+".key")

	ensureMu.Lock()
	defer ensureMu.Unlock()

	certExists, err := exists(certFile)
	if err != nil {
		return "", "", err
	}
	keyExists, err := exists(keyFile)
	if err != nil {
		return "", "", err
	}
	switch {
	case certExists && keyExists:
		if _, err := LoadServing(certFile, keyFile); err != nil {
			return "", "", err
		}
		return certFile, keyFile, nil
	case certExists:
		return "", "", fmt.Errorf("certs: certificate %q exists but its key %q does not; certificate and key must be supplied as a pair (delete the certificate to have a new pair generated)", certFile, keyFile)
	case keyExists:
		return "", "", fmt.Errorf("certs: key %q exists but its certificate %q does not; certificate and key must be supplied as a pair (delete the key to have a new pair generated)", keyFile, certFile)
	}

	certPEM, keyPEM, err := generate(first, ips, names, clk.Now())
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("certs: creating certificate directory: %w", err)
	}
	// The key goes first: a certificate file on disk always has its key beside it.
	if err := writeAtomic(keyFile, keyPEM, 0o600); err != nil {
		return "", "", err
	}
	if err := writeAtomic(certFile, certPEM, 0o644); err != nil {
		return "", "", err
	}
	syncDir(dir)
	return certFile, keyFile, nil
}

// ServingFiles applies the rule of the --tls-cert-file, --tls-private-key-file and --cert-dir
// options: when both files are given they are used (and certDir ignored); when neither is, the
// self-signed pair <certDir>/<baseName>.crt/.key is used, generated if missing (EnsureSelfSigned);
// one without the other is an error naming both options.
func ServingFiles(tlsCertFile, tlsKeyFile, certDir, baseName string, hosts []string, clk clock.Clock) (certFile, keyFile string, err error) {
	switch {
	case tlsCertFile != "" && tlsKeyFile != "":
		return tlsCertFile, tlsKeyFile, nil
	case tlsCertFile != "" || tlsKeyFile != "":
		return "", "", errors.New("--tls-cert-file and --tls-private-key-file must be given together")
	}
	return EnsureSelfSigned(certDir, baseName, hosts, clk)
}

// sans splits hosts into IP and DNS subject alternative names, adds localhost, 127.0.0.1 and ::1,
// and drops duplicates and empty entries. A bracketed IPv6 address ("[::1]") is accepted. first is
// the first host given, normalised, or "localhost" when none is.
func sans(hosts []string) (first string, ips []net.IP, names []string, err error) {
	seen := map[string]bool{}
	all := append(append([]string(nil), hosts...), "localhost", "127.0.0.1", "::1")
	for _, h := range all {
		h = strings.TrimSpace(h)
		if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
			h = h[1 : len(h)-1]
		}
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			if ip4 := ip.To4(); ip4 != nil {
				ip = ip4
			}
			if first == "" {
				first = ip.String()
			}
			if key := "ip:" + ip.String(); !seen[key] {
				seen[key] = true
				ips = append(ips, ip)
			}
			continue
		}
		if !validDNSName(h) {
			return "", nil, nil, fmt.Errorf("certs: host %q is neither an IP address nor a DNS name", h)
		}
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if first == "" {
			first = h
		}
		if key := "dns:" + h; !seen[key] {
			seen[key] = true
			names = append(names, h)
		}
	}
	return first, ips, names, nil
}

// validDNSName accepts host names, with an optional leading "*." wildcard label.
func validDNSName(s string) bool {
	s = strings.TrimPrefix(strings.TrimSuffix(s, "."), "*.")
	if s == "" || len(s) > 253 {
		return false
	}
	for _, label := range strings.Split(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

func generate(host string, ips []net.IP, names []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: generating key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, fmt.Errorf("certs: generating serial number: %w", err)
	}
	serial.Add(serial, big.NewInt(1)) // positive, never zero

	notBefore := now.Add(-Backdate).UTC().Truncate(time.Second)
	template := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: host + "@" + strconv.FormatInt(now.Unix(), 10)},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(Validity),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IPAddresses:           ips,
		DNSNames:              names,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: creating certificate: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: encoding key: %w", err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("certs: %w", err)
}

// writeAtomic writes data to path through a temporary file in the same directory, renamed into
// place once complete and synced, so that path never holds a partial file.
func writeAtomic(path string, data []byte, perm os.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("certs: writing %q: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
			err = fmt.Errorf("certs: writing %q: %w", path, err)
		}
	}()
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// syncDir makes the renames durable where the platform allows it; failure is not an error.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
