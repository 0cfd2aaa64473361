package app_test

import (
	"bytes"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"orch.io/orch/components/apiserver/app"
)

// With the defaults the server serves Go's profiles (a CPU profile of one second, gzipped as
// pprof writes it); --contention-profiling records blocking events into the block profile;
// --profiling=false serves none of it.
func TestProfilingFlags(t *testing.T) {
	t.Cleanup(func() { runtime.SetBlockProfileRate(0) }) // the rate is the process's
	s := startServer(t, func(o *app.Options) { o.ContentionProfiling = true })
	client, err := rest.HTTPClientFor(s.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	base := "https://" + s.addr
	resp, body := send(t, client, "GET", base+"/debug/pprof/profile?seconds=1", "", nil)
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(body, []byte{0x1f, 0x8b}) {
		t.Errorf("CPU profile: %d %q, want 200 and a gzipped profile", resp.StatusCode, body[:min(len(body), 100)])
	}
	blockOnPurpose()
	resp, body = send(t, client, "GET", base+"/debug/pprof/block?debug=1", "", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "blockOnPurpose") {
		t.Errorf("block profile: %d, want 200 naming blockOnPurpose:\n%.2000s", resp.StatusCode, body)
	}

	off := startServer(t, func(o *app.Options) { o.Profiling = false })
	client, err = rest.HTTPClientFor(off.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	if resp, body := send(t, client, "GET", "https://"+off.addr+"/debug/pprof/heap", "", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("--profiling=false: GET /debug/pprof/heap: %d %s, want 404", resp.StatusCode, body)
	}
}

// blockOnPurpose waits on a channel another goroutine closes, a blocking event of its own name.
//
//go:noinline
func blockOnPurpose() {
	ch := make(chan struct{})
	go func() {
		time.Sleep(20 * time.Millisecond)
		close(ch)
	}()
	<-ch
}
