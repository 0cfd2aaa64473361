package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apiserver/storage/value/kmsv2"
)

// The command generates a key, serves the v2 API on the socket it is given with keys from the
// file, answers Status with that key's ID, and stops cleanly when its context ends.
func TestServesTheV2APIOnAUnixSocket(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--generate-key"}, &out, nil); err != nil {
		t.Fatal(err)
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimSpace(out.String()))
	if err != nil || len(key) != 32 {
		t.Fatalf("--generate-key printed %q", out.String())
	}
	dir, err := os.MkdirTemp("", "kms")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	keyFile := filepath.Join(dir, "keys")
	if err := os.WriteFile(keyFile, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "kms.sock")
	// A socket left by an earlier run is replaced.
	if err := os.WriteFile(sock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "unix://" + sock, "--key-file", keyFile}, &out, func() { close(ready) })
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("run: %v", err)
	}
	client, closeConn, err := kmsv2.Dial("unix://"+sock, 5*time.Second, clock.New())
	if err != nil {
		t.Fatal(err)
	}
	defer closeConn()
	st, err := client.Status(ctx)
	if err != nil || st.Healthz != "ok" || st.Version != "v2" || !strings.HasPrefix(st.KeyID, "orch-kms-") {
		t.Fatalf("status %+v, %v", st, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run after its context ended: %v", err)
	}
}

func TestRequiredFlags(t *testing.T) {
	err := run(context.Background(), nil, &bytes.Buffer{}, nil)
	if err == nil || !strings.Contains(err.Error(), "--listen is required") || !strings.Contains(err.Error(), "--key-file is required") {
		t.Fatalf("err %v", err)
	}
	err = run(context.Background(), []string{"--listen", "/tmp/x.sock", "--key-file", filepath.Join(t.TempDir(), "none")}, &bytes.Buffer{}, nil)
	if err == nil || !strings.Contains(err.Error(), "--key-file") {
		t.Fatalf("missing key file: %v", err)
	}
}
