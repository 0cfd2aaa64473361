//go:build e2e

package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
)

// execOnAgent runs argv in the pod's container through the agent's /exec, over SPDY or over
// WebSocket (v4.channel.k8s.io, what a runtime's streaming server speaks), as kubectl exec's
// streams reach a kubelet.
func execOnAgent(t *testing.T, https, pod, container string, websocket bool, stdin string, argv ...string) (string, string, error) {
	t.Helper()
	q := url.Values{"command": argv, "output": {"1"}, "error": {"1"}}
	if stdin != "" {
		q.Set("input", "1")
	}
	u, _ := url.Parse("https://127.0.0.1:" + https + "/exec/default/" + pod + "/" + container + "?" + q.Encode())
	cfg := &rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	var e remotecommand.Executor
	var err error
	if websocket {
		e, err = remotecommand.NewWebSocketExecutorForProtocols(cfg, http.MethodGet, u.String(), "v4.channel.k8s.io")
	} else {
		e, err = remotecommand.NewSPDYExecutor(cfg, http.MethodPost, u)
	}
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	opts := remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}
	if stdin != "" {
		opts.Stdin = strings.NewReader(stdin)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = e.StreamWithContext(ctx, opts)
	return stdout.String(), stderr.String(), err
}

// checkExec proves the agent's exec against the runtime's streaming server (containerd's, or
// fakecri's): output whole and in order over either protocol, stdin carried, exit codes
// propagated.
func checkExec(t *testing.T, https, pod, container string) {
	t.Helper()
	var want bytes.Buffer
	for i := 1; i <= 200000; i++ {
		want.WriteString(strconv.Itoa(i))
		want.WriteByte('\n')
	}
	for _, ws := range []bool{false, true} {
		name := map[bool]string{false: "SPDY", true: "WebSocket"}[ws]
		stdout, stderr, err := execOnAgent(t, https, pod, container, ws, "", "seq", "1", "200000")
		if err != nil || sha256.Sum256([]byte(stdout)) != sha256.Sum256(want.Bytes()) {
			t.Errorf("%s: exec seq 1 200000: %d bytes, %v (stderr %q); want the %d bytes of the sequence", name, len(stdout), err, stderr, want.Len())
		}
		_, _, err = execOnAgent(t, https, pod, container, ws, "", "sh", "-c", "exit 3")
		var exit exec.CodeExitError
		if !errors.As(err, &exit) || exit.Code != 3 {
			t.Errorf("%s: exec sh -c 'exit 3': %v, want exit code 3", name, err)
		}
	}
	if stdout, _, err := execOnAgent(t, https, pod, container, false, "typed in\n", "cat"); err != nil || stdout != "typed in\n" {
		t.Errorf("exec cat with stdin: %q, %v", stdout, err)
	}
}
