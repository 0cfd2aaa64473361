package app_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apiserver/app"
	"orch.io/orch/components/freeport"
)

// A server whose etcd does not answer waits for it, as kube-apiserver does, and a shutdown asked
// for meanwhile (SIGTERM) ends the wait: Run returns instead of holding on to its port and data.
func TestShutdownWhileEtcdDoesNotAnswer(t *testing.T) {
	o := app.NewOptions()
	o.BindAddress, o.SecurePort, o.DataDir = "127.0.0.1", freeport.For(t), t.TempDir()
	o.EtcdServers = []string{"http://127.0.0.1:" + strconv.Itoa(freeport.For(t))} // nothing listens there
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, o, clock.New(), nil) }()
	select {
	case err := <-done:
		t.Fatalf("app.Run returned before its context ended: %v", err)
	case <-time.After(time.Second): // waiting for etcd
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("app.Run did not return within 30s of its context ending while etcd did not answer")
	}
}
