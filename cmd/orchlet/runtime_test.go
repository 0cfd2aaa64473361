package main

import (
	"testing"

	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/fakecritest"
)

// withRuntime serves a fakecri on a unix socket for the test and returns args that run the agent
// on it with its servers off, so tests need neither a real runtime nor the fixed ports.
func withRuntime(t testing.TB, args ...string) []string {
	t.Helper()
	rt, err := fakecri.New(fakecri.Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	sock := fakecritest.Serve(t, rt)
	return append([]string{"--enable-server=false", "--read-only-port=0", "--healthz-port=0", "--container-runtime-endpoint=" + sock}, args...)
}
