package app

import (
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/certs/certstest"
)

// The signing CA is loaded from --cluster-signing-cert-file and --cluster-signing-key-file with
// --cluster-signing-duration; a leaf certificate is not a CA and is refused by name.
func TestClusterSigning(t *testing.T) {
	dir := t.TempDir()
	ca := certstest.NewCA(t, "orch-ca")
	keyDER, err := x509.MarshalECPrivateKey(ca.Key())
	if err != nil {
		t.Fatal(err)
	}
	certstest.WriteFile(t, dir+"/ca.crt", ca.PEM)
	certstest.WriteFile(t, dir+"/ca.key", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	leafCert, leafKey := ca.Client(t, "leaf").WriteFiles(t, dir, "leaf")

	tests := []struct {
		name, cert, key string
		want            string // error text; "" loads
	}{
		{"no flags", "", "", ""},
		{"CA", dir + "/ca.crt", dir + "/ca.key", ""},
		{"leaf", leafCert, leafKey, "--cluster-signing-cert-file " + leafCert + ": the certificate is not a CA"},
		{"key of another certificate", dir + "/ca.crt", leafKey, "--cluster-signing-cert-file/--cluster-signing-key-file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			o.ClusterSigningCertFile, o.ClusterSigningKeyFile = tt.cert, tt.key
			tune, err := clusterSigning(o)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var c server.Config
			tune(&c)
			if tt.cert == "" && c.Signing != nil {
				t.Fatal("a signer without signing flags")
			}
			if tt.cert != "" && (c.Signing == nil || !c.Signing.Cert.Equal(ca.Cert) || c.Signing.Duration != 8760*time.Hour) {
				t.Fatalf("signing: %+v", c.Signing)
			}
		})
	}
}
