// Command runpki writes the certificates `make run` locks its orchlet down with: a certificate
// authority the orchlet trusts for client certificates (--client-ca-file) and the client
// certificate orch-apiserver presents to it (--orchlet-client-certificate, --orchlet-client-key),
// whose user, orch-apiserver-orchlet-client in system:masters, the orchlet's webhook then asks the
// API server about. Files already there are kept.
//
//	go run ./cmd/internal/runpki <dir>
package main

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
	"os"
	"path/filepath"
	"time"

	"orch.io/orch/components/certs"
)

// The files runpki writes under its directory.
const (
	CAFile         = "orchlet-client-ca.crt"
	ClientCertFile = "orch-apiserver-orchlet-client.crt"
	ClientKeyFile  = "orch-apiserver-orchlet-client.key"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: runpki <dir>")
		os.Exit(2)
	}
	if err := write(os.Args[1], time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "runpki:", err)
		os.Exit(1)
	}
}

func write(dir string, now time.Time) error {
	if _, err := os.Stat(filepath.Join(dir, ClientKeyFile)); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "orch-orchlet-client-ca"},
		NotBefore: now.Add(-certs.Backdate), NotAfter: now.Add(certs.Validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	client := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "orch-apiserver-orchlet-client", Organization: []string{"system:masters"}},
		NotBefore: now.Add(-certs.Backdate), NotAfter: now.Add(certs.Validity),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, client, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name, kind string
		der        []byte
	}{
		{CAFile, "CERTIFICATE", caDER}, {ClientCertFile, "CERTIFICATE", der}, {ClientKeyFile, "PRIVATE KEY", keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, f.name), pem.EncodeToMemory(&pem.Block{Type: f.kind, Bytes: f.der}), 0o600); err != nil {
			return err
		}
	}
	return nil
}
