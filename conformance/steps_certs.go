package conformance

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func certSteps() []StepDef {
	return []StepDef{
		{`^a certificate authority "([^"]*)"$`, func(w *World) any { return w.newCA }},
		{`^a (client|serving) certificate "([^"]*)" signed by "([^"]*)"$`, func(w *World) any { return w.newCert }},
		{`^the HTTPS server presents the certificate "([^"]*)"$`, func(w *World) any { return w.presentsCert }},
		{`^the HTTPS server presents a certificate stored under "([^"]*)"$`, func(w *World) any { return w.presentsStoredCert }},
		{`^"([^"]*)" holds no certificate$`, func(w *World) any { return w.holdsNoCert }},
	}
}

// keyPair is a certificate the scenario generated, written to <name>.crt and <name>.key.
type keyPair struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// certDir holds the certificates the scenario generates: {certs} in the agent's arguments.
func (w *World) certDir() string { return filepath.Join(w.dir, "certs") }

func (w *World) newCA(name string) error {
	return w.issue(name, &x509.Certificate{
		Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, "")
}

func (w *World) newCert(kind, name, ca string) error {
	tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: name}, KeyUsage: x509.KeyUsageDigitalSignature}
	if kind == "client" {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.DNSNames, tmpl.IPAddresses = []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	return w.issue(name, tmpl, ca)
}

// issue signs tmpl with the named authority (itself when ca is "") and writes the pair.
func (w *World) issue(name string, tmpl *x509.Certificate, ca string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return err
	}
	tmpl.SerialNumber = serial
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	parent, signer := tmpl, key
	if ca != "" {
		p, ok := w.certs[ca]
		if !ok {
			return fmt.Errorf("no certificate authority %q", ca)
		}
		parent, signer = p.cert, p.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(w.certDir(), 0o700); err != nil {
		return err
	}
	base := filepath.Join(w.certDir(), name)
	if err := os.WriteFile(base+".crt", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(base+".key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	if w.certs == nil {
		w.certs = map[string]*keyPair{}
	}
	w.certs[name] = &keyPair{cert: cert, key: key}
	return nil
}

func (w *World) useClientCert(name string) error {
	p, ok := w.certs[name]
	if !ok {
		return fmt.Errorf("no certificate %q", name)
	}
	w.node().clientCert = &tls.Certificate{Certificate: [][]byte{p.cert.Raw}, PrivateKey: p.key}
	return nil
}

// presented is the leaf certificate the HTTPS server shows.
func (w *World) presented() (*x509.Certificate, error) {
	conn, err := tls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", w.node().ports["HTTPS"]), w.clientTLS())
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0], nil
}

func (w *World) presentsCert(name string) error {
	got, err := w.presented()
	if err != nil {
		return err
	}
	if want, ok := w.certs[name]; !ok || !bytes.Equal(got.Raw, want.cert.Raw) {
		return fmt.Errorf("the HTTPS server presents %q, not the certificate %q", got.Subject.CommonName, name)
	}
	return nil
}

// expandDir fills {dir} with the scenario's directory, and spells the names SPEC.md leaves open
// (orchlet-client-current.pem) the target's way.
func (w *World) expandDir(dir string) string {
	return strings.ReplaceAll(w.t.Profile.Spell(dir), "{dir}", w.dir)
}

// pemCerts lists the certificates in the PEM files under dir.
func pemCerts(dir string) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for b, rest := pem.Decode(data); b != nil; b, rest = pem.Decode(rest) {
			if b.Type == "CERTIFICATE" {
				if c, err := x509.ParseCertificate(b.Bytes); err == nil {
					out = append(out, c)
				}
			}
		}
		return nil
	})
	if os.IsNotExist(err) {
		return nil, nil
	}
	return out, err
}

func (w *World) presentsStoredCert(dir string) error {
	got, err := w.presented()
	if err != nil {
		return err
	}
	stored, err := pemCerts(w.expandDir(dir))
	if err != nil {
		return err
	}
	for _, c := range stored {
		if bytes.Equal(c.Raw, got.Raw) {
			return nil
		}
	}
	return fmt.Errorf("the presented certificate %q is not stored under %s (%d certificates there)", got.Subject.CommonName, dir, len(stored))
}

func (w *World) holdsNoCert(dir string) error {
	stored, err := pemCerts(w.expandDir(dir))
	if err == nil && len(stored) > 0 {
		err = fmt.Errorf("%s holds %d certificates", dir, len(stored))
	}
	return err
}
