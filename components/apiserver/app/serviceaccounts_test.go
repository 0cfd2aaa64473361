package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apiserver/server"
)

// writeECKey writes a PEM P-256 private key (or its public half) and returns the file.
func writeECKey(t *testing.T, dir, name string, public bool) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block := &pem.Block{Type: "EC PRIVATE KEY"}
	if public {
		block.Type, block.Bytes, err = "PUBLIC KEY", nil, nil
		if block.Bytes, err = x509.MarshalPKIXPublicKey(&k.PublicKey); err != nil {
			t.Fatal(err)
		}
	} else if block.Bytes, err = x509.MarshalECPrivateKey(k); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// The service account flags are checked as kube-apiserver checks them, each problem naming its
// flag, and the keys are loaded or refused by file.
func TestServiceAccountFlags(t *testing.T) {
	dir := t.TempDir()
	key := writeECKey(t, dir, "sa.key", false)
	pub := writeECKey(t, dir, "sa.pub", true)
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	signing := func(s *serviceAccountOptions) {
		s.Issuers, s.SigningKeyFile, s.KeyFiles = []string{"https://orch.example"}, key, []string{key, pub}
	}
	for _, tc := range []struct {
		name    string
		set     func(*serviceAccountOptions)
		invalid string // from Validate
		load    string // from loading the keys
	}{
		{"none", func(*serviceAccountOptions) {}, "", ""},
		{"signing", signing, "", ""},
		{"issuer without a signing key", func(s *serviceAccountOptions) { s.Issuers = []string{"orch"} },
			"--service-account-signing-key-file, --service-account-issuer, and --api-audiences should be specified together", ""},
		{"audiences alone", func(s *serviceAccountOptions) { s.APIAudiences = []string{"api"} },
			"--service-account-signing-key-file, --service-account-issuer, and --api-audiences should be specified together", ""},
		{"signing without verifying keys", func(s *serviceAccountOptions) { signing(s); s.KeyFiles = nil },
			"--service-account-key-file is required with --service-account-signing-key-file", ""},
		{"empty issuer", func(s *serviceAccountOptions) { signing(s); s.Issuers = []string{""} }, "service-account-issuer should not be an empty string", ""},
		{"issuer twice", func(s *serviceAccountOptions) { signing(s); s.Issuers = []string{"a", "a"} }, `service-account-issuer "a" is already specified`, ""},
		{"issuer not a URL", func(s *serviceAccountOptions) { signing(s); s.Issuers = []string{"https://a b:x"} }, `service-account-issuer "https://a b:x" contained a ':' but was not a valid URL`, ""},
		{"maximum under an hour", func(s *serviceAccountOptions) { signing(s); s.MaxExpiration = 59 * time.Minute },
			"the service-account-max-token-expiration must be between 1 hour and 2^32 seconds", ""},
		{"no lookup", func(s *serviceAccountOptions) { signing(s); s.Lookup = false }, "--service-account-lookup=false", ""},
		{"a signing key that is no key", func(s *serviceAccountOptions) { signing(s); s.SigningKeyFile = garbage }, "", "--service-account-signing-key-file " + garbage},
		{"a public key to sign with", func(s *serviceAccountOptions) { signing(s); s.SigningKeyFile = pub }, "", "--service-account-signing-key-file " + pub},
		{"a key file without keys", func(s *serviceAccountOptions) { signing(s); s.KeyFiles = []string{garbage} }, "", "data does not contain any valid RSA or ECDSA public keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewOptions()
			tc.set(&o.ServiceAccounts)
			err := o.Validate()
			if tc.invalid != "" {
				if err == nil || !strings.Contains(err.Error(), tc.invalid) {
					t.Fatalf("Validate = %v, want %q", err, tc.invalid)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			tune, authenticator, err := serviceAccountTokens(o, clock.NewMock())
			if tc.load != "" {
				if err == nil || !strings.Contains(err.Error(), tc.load) {
					t.Fatalf("loading = %v, want %q", err, tc.load)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var c server.Config
			tune(&c)
			configured := len(o.ServiceAccounts.Issuers) > 0
			if (c.ServiceAccounts != nil) != configured || (authenticator != nil) != configured {
				t.Fatalf("issuer %v, authenticator %v, want both only with the flags", c.ServiceAccounts, authenticator)
			}
			if configured && (c.ServiceAccounts.Issuer == nil || strings.Join(c.ServiceAccounts.Audiences, ",") != "https://orch.example") {
				t.Fatalf("issuer %+v: the API audiences default to the issuer", c.ServiceAccounts)
			}
		})
	}
}
