// Package fakecritest serves a fakecri runtime on a unix socket for the duration of a test, the way
// tests of CRI clients (the node agent, its pod workers) reach it.
package fakecritest

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"go.opentelemetry.io/otel/trace/noop"
	cri "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"

	"orch.io/orch/fakecri"
)

// Serve serves rt over gRPC on a unix socket in a temporary directory, and its streams (exec,
// attach, port-forward) on a loopback port, until the test ends, then stops the servers and
// closes rt. It returns the endpoint ("unix:///...") a CRI client dials.
func Serve(t testing.TB, rt *fakecri.Runtime) string {
	t.Helper()
	endpoint := "unix://" + filepath.Join(t.TempDir(), "cri.sock")
	lis, err := fakecri.Listen(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	srv := fakecri.NewGRPCServer(rt)
	go func() { _ = srv.Serve(lis) }()
	streamLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	streams, err := rt.ServeStreams(streamLis, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop(); streams.Close(); rt.Close() })
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

// Clients dials endpoint with the CRI clients the kubelet uses (k8s.io/cri-client), as the node
// agent and crictl reach a runtime; they are closed when the test ends.
func Clients(t testing.TB, endpoint string) (cri.RuntimeService, cri.ImageManagerService) {
	t.Helper()
	ctx := context.Background()
	rs, err := remote.NewRemoteRuntimeServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(10 * time.Second).
		WithTracerProvider(noop.NewTracerProvider()).Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rs.Close(ctx) })
	is, err := remote.NewRemoteImageServiceBuilder().WithEndpoint(endpoint).WithConnectionTimeout(10 * time.Second).
		WithTracerProvider(noop.NewTracerProvider()).Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = is.Close(ctx) })
	return rs, is
}

// RunUntil drives the component step runs on rt's clock up to end: a step, then the clock moved
// (rt answering what falls due on the way) to next, the component's next deadline; once that is
// past end or there is none, the clock moves to end for a last step.
func RunUntil(t testing.TB, ctx context.Context, rt *fakecri.Runtime, mock *clock.Mock, end time.Time, step func(), next func() (time.Time, bool)) {
	t.Helper()
	for {
		step()
		at, ok := next()
		last := !ok || at.After(end)
		if last {
			at = end
		}
		if err := rt.AdvanceTo(ctx, mock, at); err != nil {
			t.Fatal(err)
		}
		if last {
			step()
			return
		}
	}
}
