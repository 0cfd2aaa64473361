package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The client certificate verifies against the CA as a client's, names orch-apiserver's user, and
// a second run keeps the files.
func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	now := time.Now()
	if err := write(dir, now); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, ClientCertFile), filepath.Join(dir, ClientKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(filepath.Join(dir, CAFile))
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA certificate")
	}
	cert, _ := x509.ParseCertificate(pair.Certificate[0])
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != "orch-apiserver-orchlet-client" || cert.Subject.Organization[0] != "system:masters" {
		t.Errorf("subject %v", cert.Subject)
	}
	if err := write(dir, now); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(filepath.Join(dir, CAFile))
	if string(again) != string(caPEM) {
		t.Error("a second run replaced the CA")
	}
}
