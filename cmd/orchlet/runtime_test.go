package main

import (
	"path/filepath"
	"testing"

	"orch.io/orch/fakecri"
)

// withRuntime serves a fakecri on a unix socket for the test and returns args that run the agent
// on it with its servers off, so tests need neither a real runtime nor the fixed ports.
func withRuntime(t *testing.T, args ...string) []string {
	t.Helper()
	rt, err := fakecri.New(fakecri.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	sock := "unix://" + filepath.Join(t.TempDir(), "cri.sock")
	lis, err := fakecri.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := fakecri.NewGRPCServer(rt)
	go srv.Serve(lis)
	t.Cleanup(func() { srv.Stop(); rt.Close() })
	return append([]string{"--enable-server=false", "--read-only-port=0", "--healthz-port=0", "--container-runtime-endpoint=" + sock}, args...)
}
