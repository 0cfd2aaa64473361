// Package fakecritest serves a fakecri runtime on a unix socket for the duration of a test, the way
// tests of CRI clients (the node agent, its pod workers) reach it.
package fakecritest

import (
	"path/filepath"
	"testing"

	"orch.io/orch/fakecri"
)

// Serve serves rt over gRPC on a unix socket in a temporary directory until the test ends, then
// stops the server and closes rt. It returns the endpoint ("unix:///...") a CRI client dials.
func Serve(t testing.TB, rt *fakecri.Runtime) string {
	t.Helper()
	endpoint := "unix://" + filepath.Join(t.TempDir(), "cri.sock")
	lis, err := fakecri.Listen(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	srv := fakecri.NewGRPCServer(rt)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); rt.Close() })
	return endpoint
}

// Start makes a runtime from opts and serves it as Serve does, failing the test if opts are
// refused. It returns the runtime, for the test to script and inspect, and its endpoint.
func Start(t testing.TB, opts fakecri.Options) (*fakecri.Runtime, string) {
	t.Helper()
	rt, err := fakecri.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return rt, Serve(t, rt)
}
