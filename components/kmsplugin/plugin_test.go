package kmsplugin_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	kmsservice "k8s.io/kms/pkg/service"

	"orch.io/orch/components/apiserver/storage/value/kmsv2"
	"orch.io/orch/components/kmsplugin"
)

func newKey(t *testing.T) string {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(k)
}

func keyID(t *testing.T, b64 string) string {
	t.Helper()
	k, _ := base64.StdEncoding.DecodeString(b64)
	return kmsplugin.KeyID(k)
}

// serve runs the plugin on a unix socket and returns a client over real gRPC.
func serve(t *testing.T, keyFile string) kmsservice.Service {
	t.Helper()
	dir, err := os.MkdirTemp("", "kms")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p, err := kmsplugin.New(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "kms.sock")
	l, err := kmsplugin.Listen("unix://" + sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- kmsplugin.Serve(ctx, l, p) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	client, closeConn, err := kmsv2.Dial("unix://"+sock, 5*time.Second, clock.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = closeConn() })
	return client
}

// Over the v2 gRPC API: the first key of the file wraps and names the key ID; a key written first
// later becomes the key ID of the next Status, and what the old key wrapped still unwraps while
// the old key stays in the file.
func TestPluginWrapsAndRotates(t *testing.T) {
	ctx := context.Background()
	keyFile := filepath.Join(t.TempDir(), "keys")
	k1, k2 := newKey(t), newKey(t)
	if err := os.WriteFile(keyFile, []byte("# orch kms keys\n"+k1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := serve(t, keyFile)
	st, err := c.Status(ctx)
	if err != nil || st.Version != "v2" || st.Healthz != "ok" || st.KeyID != keyID(t, k1) {
		t.Fatalf("status %+v, %v", st, err)
	}
	dek := []byte("0123456789abcdef0123456789abcdef")
	wrapped, err := c.Encrypt(ctx, "uid-1", dek)
	if err != nil || wrapped.KeyID != st.KeyID || bytes.Contains(wrapped.Ciphertext, dek) {
		t.Fatalf("encrypt %+v, %v", wrapped, err)
	}
	got, err := c.Decrypt(ctx, "uid-2", &kmsservice.DecryptRequest{Ciphertext: wrapped.Ciphertext, KeyID: wrapped.KeyID})
	if err != nil || !bytes.Equal(got, dek) {
		t.Fatalf("decrypt %q, %v", got, err)
	}

	if err := os.WriteFile(keyFile, []byte(k2+"\n"+k1+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err = c.Status(ctx); err != nil || st.KeyID != keyID(t, k2) {
		t.Fatalf("status after rotation %+v, %v", st, err)
	}
	if w, err := c.Encrypt(ctx, "uid-3", dek); err != nil || w.KeyID != keyID(t, k2) {
		t.Fatalf("encrypt after rotation %+v, %v", w, err)
	}
	if got, err := c.Decrypt(ctx, "uid-4", &kmsservice.DecryptRequest{Ciphertext: wrapped.Ciphertext, KeyID: wrapped.KeyID}); err != nil || !bytes.Equal(got, dek) {
		t.Fatalf("old wrapped key after rotation: %v", err)
	}
	// The key ID is authenticated: a ciphertext claimed by another key ID does not unwrap.
	if _, err := c.Decrypt(ctx, "uid-5", &kmsservice.DecryptRequest{Ciphertext: wrapped.Ciphertext, KeyID: keyID(t, k2)}); err == nil {
		t.Fatal("unwrapped under another key ID")
	}

	if err := os.WriteFile(keyFile, []byte(k2+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Status(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Decrypt(ctx, "uid-6", &kmsservice.DecryptRequest{Ciphertext: wrapped.Ciphertext, KeyID: wrapped.KeyID}); err == nil || !strings.Contains(err.Error(), "no key with ID") {
		t.Fatalf("unwrap with the key removed: %v", err)
	}
	// A broken file makes the plugin unhealthy, naming the line.
	if err := os.WriteFile(keyFile, []byte(k2+"\nnot-a-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if st, err := c.Status(ctx); err != nil || st.Healthz == "ok" || !strings.Contains(st.Healthz, "line 2") {
		t.Fatalf("status with a broken file %+v, %v", st, err)
	}
}

func TestNewRefusesBadKeyFiles(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"empty":     "# nothing\n\n",
		"short key": base64.StdEncoding.EncodeToString([]byte("short")) + "\n",
		"not b64":   "%%%\n",
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := kmsplugin.New(path); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := kmsplugin.New(filepath.Join(dir, "missing")); err == nil {
		t.Error("missing file accepted")
	}
}
