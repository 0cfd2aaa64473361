package kubepeer

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestMain lets the test binary serve as the peer's etcd, as the tools run themselves for it.
func TestMain(m *testing.M) {
	if i := slices.Index(os.Args, "--serve-etcd"); i >= 0 && i+1 < len(os.Args) {
		if err := ServeEtcd(os.Args[i+1]); err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A kube-apiserver that exits at once is reported with its log, and its etcd is stopped and the
// peer's files removed.
func TestStartFailsWithItsLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "peer")
	bin := filepath.Join(t.TempDir(), "kube-apiserver")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho refusing \"$1\"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Start(context.Background(), bin, dir, "--serve-etcd", true)
	if err == nil || !strings.Contains(err.Error(), "exited during start-up") || !strings.Contains(err.Error(), "refusing --bind-address=127.0.0.1") {
		t.Fatalf("Start: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the peer's directory is still there: %v", err)
	}
}

// StartSelf answers where this program, run again, serves; Stop ends it and removes its directory.
func TestStartSelfEtcd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	p, endpoint, err := StartSelf(dir, filepath.Join(t.TempDir(), "etcd.log"), "--serve-etcd", dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(endpoint, "http://127.0.0.1:") {
		t.Errorf("endpoint %q", endpoint)
	}
	p.Stop()
	select {
	case <-p.Done:
	default:
		t.Error("still running after Stop")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("its directory is still there: %v", err)
	}
}
