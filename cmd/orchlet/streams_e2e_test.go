//go:build e2e

package main

import (
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"

	"orch.io/orch/fakecri/fakecritest"
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
	return fakecritest.Stream(&rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, u, websocket, stdin, "v4.channel.k8s.io")
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

// checkPortForward starts busybox's httpd in the container, serving a file of about 20 MB, and
// fetches it through the agent's /portForward (SPDY, as kubectl port-forward reaches a kubelet):
// the bytes arrive unchanged.
func checkPortForward(t *testing.T, https, pod, container string) {
	t.Helper()
	port := 20000 + os.Getpid()%10000 // the pod is on the host's network
	script := fmt.Sprintf("seq 1 2600000 > /tmp/big && httpd -p 127.0.0.1:%d -h /tmp", port)
	if _, stderr, err := execOnAgent(t, https, pod, container, false, "", "sh", "-c", script); err != nil {
		t.Fatalf("starting httpd: %v (%s)", err, stderr)
	}
	u, _ := url.Parse("https://127.0.0.1:" + https + "/portForward/default/" + pod)
	transport, upgrader, err := spdy.RoundTripperFor(&rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		t.Fatal(err)
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	pf, err := portforward.New(spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u),
		[]string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	go func() { failed <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-failed:
		t.Fatalf("port-forward: %v", err)
	}
	ports, err := pf.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: time.Minute}).Get(fmt.Sprintf("http://127.0.0.1:%d/big", ports[0].Local))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	var want bytes.Buffer
	for i := 1; i <= 2600000; i++ {
		want.WriteString(strconv.Itoa(i))
		want.WriteByte('\n')
	}
	if err != nil || resp.StatusCode != http.StatusOK || sha256.Sum256(body) != sha256.Sum256(want.Bytes()) {
		t.Fatalf("GET /big through the forward: %d, %d bytes, %v; want the %d bytes of the file", resp.StatusCode, len(body), err, want.Len())
	}
	t.Logf("port-forward: %d bytes through the agent unchanged", len(body))
}

// checkPreviousLogs reads a restarting container's log through the agent's /containerLogs, as
// kubectl logs and logs --previous do: both attempts wrote the same line, at times the back-off
// sets apart, so with timestamps the previous attempt's line is another than the latest's.
func checkPreviousLogs(t *testing.T, https, pod, container string) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: insecureTLS()}}
	get := func(query string) string {
		t.Helper()
		resp, err := client.Get("https://127.0.0.1:" + https + "/containerLogs/default/" + pod + "/" + container + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("logs%s: %d %s", query, resp.StatusCode, body)
		}
		return string(body)
	}
	if latest, previous := get(""), get("?previous=true"); latest != "attempt 1\n" || previous != "attempt 1\n" {
		t.Errorf("logs %q, logs --previous %q: want each attempt's line", latest, previous)
	}
	latest, previous := get("?timestamps=true"), get("?previous=true&timestamps=true")
	if !strings.HasSuffix(latest, " attempt 1\n") || !strings.HasSuffix(previous, " attempt 1\n") || latest == previous {
		t.Errorf("logs --timestamps %q, logs --previous --timestamps %q: want two attempts' lines, at different times", latest, previous)
	}
}

func insecureTLS() *tls.Config { return &tls.Config{InsecureSkipVerify: true} }
