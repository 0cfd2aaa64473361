package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apiserver/app"
	"orch.io/orch/components/freeport"
)

// A second server on a data directory in use says so at once. The embedded etcd alone waits for
// the first one's lock, silent and deaf to its context, for as long as the first one runs.
func TestSecondServerOnADataDirInUseFails(t *testing.T) {
	first := startServer(t)
	o := app.NewOptions()
	o.BindAddress = "127.0.0.1"
	o.SecurePort = freeport.For(t)
	o.DataDir = first.dataDir
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, o, clock.New(), nil) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), first.dataDir) || !strings.Contains(err.Error(), "in use by another process") {
			t.Fatalf("app.Run on a data directory in use: %v, want an error naming it in use by another process", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("app.Run on a data directory in use: still starting after 20s, want an error at once")
	}
}
