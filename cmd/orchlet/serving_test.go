package main

import (
	"net/http"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/components/syncbuf"
)

// servingAgent is the built orchlet running with its three servers on free loopback ports.
type servingAgent struct {
	cmd                      *exec.Cmd
	stderr                   *syncbuf.Buffer
	https, readOnly, healthz string
	done                     chan struct{} // closed when the process has exited
	err                      error         // its exit, once done
}

// startServing starts the built orchlet with args, a --root-dir of the test's own (args may give
// another) and its servers on free loopback ports, and waits
// until its read-only server answers. A port taken by another process before the agent bound it
// (parallel test packages pick free ports too) is retried with others, at most twice.
func startServing(t *testing.T, args ...string) *servingAgent {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	for attempt := 0; ; attempt++ {
		a := &servingAgent{https: apptest.FreePort(t), readOnly: apptest.FreePort(t), healthz: apptest.FreePort(t), stderr: &syncbuf.Buffer{}, done: make(chan struct{})}
		all := append(append([]string{"--root-dir=" + t.TempDir()}, args...), "--address=127.0.0.1", "--port="+a.https, "--read-only-port="+a.readOnly,
			"--healthz-bind-address=127.0.0.1", "--healthz-port="+a.healthz)
		a.cmd = exec.Command(binary, all...)
		a.cmd.Stderr = a.stderr
		if err := a.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { a.err = a.cmd.Wait(); close(a.done) }()
		t.Cleanup(func() { _ = a.cmd.Process.Kill(); <-a.done })
		deadline := time.Now().Add(20 * time.Second)
		for {
			select {
			case <-a.done:
				if attempt < 2 && strings.Contains(a.stderr.String(), "address already in use") {
					t.Logf("a port was taken before orchlet bound it, retrying:\n%s", a.stderr.String())
				} else {
					t.Fatalf("orchlet exited before serving: %v\n%s", a.err, a.stderr.String())
				}
			default:
				if _, err := getPods(client, "http://127.0.0.1:"+a.readOnly+"/pods"); err == nil {
					return a
				}
				if time.Now().After(deadline) {
					t.Fatalf("orchlet not serving within 20s; stderr:\n%s", a.stderr.String())
				}
				time.Sleep(20 * time.Millisecond)
				continue
			}
			break
		}
	}
}

// stop sends SIGTERM and answers how the agent exited.
func (a *servingAgent) stop(t *testing.T) error {
	t.Helper()
	if err := a.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.done:
		return a.err
	case <-time.After(30 * time.Second):
		t.Fatal("orchlet did not exit within 30s of SIGTERM")
		return nil
	}
}
