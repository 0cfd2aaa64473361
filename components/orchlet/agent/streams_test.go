package agent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/server"
	"orch.io/orch/fakecri/fakecritest"
	"orch.io/orch/fakecri/script"
)

// serve starts the agent's HTTPS server on a loopback port, its streams answered by the agent
// from fakecri's streaming server, and answers its base URL.
func (w *world) serve() string {
	w.t.Helper()
	cfg := v1beta1.NewDefault()
	cfg.ReadOnlyPort, cfg.HealthzPort = 0, 0
	gates := gatesOf(w.t, cfg)
	s, err := server.New(cfg, server.Deps{
		Clock: w.mock, NodeName: "node-a", Pods: w.agent.Pods, Stats: w.agent, Configz: func() any { return cfg },
		Gates: gates, Metrics: prometheus.NewRegistry(), Logs: w.agent, Streams: w.agent, CertDir: w.t.TempDir(),
		Listen: func(network, _ string) (net.Listener, error) { return net.Listen(network, "127.0.0.1:0") },
	})
	if err != nil {
		w.t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { s.Close() })
	return "https://" + s.Addrs().HTTPS
}

var insecure = &rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}}

// execute runs cmd in the web pod's app container through the agent's /exec over SPDY, or over
// WebSocket (v4.channel.k8s.io, what the runtime's streaming server speaks) with ws.
func execute(t *testing.T, base string, ws bool, stdin string, cmd ...string) (string, string, error) {
	t.Helper()
	q := url.Values{"command": cmd, "output": {"1"}, "error": {"1"}}
	if stdin != "" {
		q.Set("input", "1")
	}
	u, _ := url.Parse(base + "/exec/default/web-node-a/app?" + q.Encode())
	return fakecritest.Stream(insecure, u, ws, stdin, "v4.channel.k8s.io")
}

// kubectl exec's protocols through the agent reach the runtime's streaming server: output whole
// and in order, stdin, stderr and exit codes carried; /run answers in one body.
func TestStreamsThroughTheAgent(t *testing.T) {
	w := newWorld(t, &script.Script{
		Exec:  []script.ExecRule{{Command: "fail*", ExitCode: 2, Stderr: "boom"}},
		Files: []script.FileRule{{Match: script.ContainerMatch{Name: "app"}, Path: "/etc/motd", Content: "welcome\n"}},
	})
	w.runUntil(5 * time.Second)
	base := w.serve()

	for _, ws := range []bool{false, true} {
		name := map[bool]string{false: "SPDY", true: "WebSocket"}[ws]
		stdout, _, err := execute(t, base, ws, "", "seq", "1", "2000000")
		var want bytes.Buffer
		for i := 1; i <= 2000000; i++ {
			want.WriteString(strconv.Itoa(i))
			want.WriteByte('\n')
		}
		if err != nil || sha256.Sum256([]byte(stdout)) != sha256.Sum256(want.Bytes()) {
			t.Errorf("%s: seq 1 2000000: %d bytes, %v; want the %d bytes of the sequence", name, len(stdout), err, want.Len())
		}
		if stdout, _, err := execute(t, base, ws, "", "cat", "/etc/motd"); err != nil || stdout != "welcome\n" {
			t.Errorf("%s: cat /etc/motd = %q, %v", name, stdout, err)
		}
		_, stderr, err := execute(t, base, ws, "", "fail", "now")
		var exit exec.CodeExitError
		if !errors.As(err, &exit) || exit.Code != 2 || stderr != "boom" {
			t.Errorf("%s: fail now: stderr %q, %v; want exit code 2 and stderr boom", name, stderr, err)
		}
	}
	if stdout, _, err := execute(t, base, false, "typed in\n", "cat"); err != nil || stdout != "typed in\n" {
		t.Errorf("cat of stdin = %q, %v", stdout, err)
	}
	if _, _, err := execute(t, base, false, "", "nope-not-a-binary"); err == nil {
		t.Error("an exec of a command the runtime cannot run succeeded")
	}

	out, err := w.agent.RunInContainer(w.ctx, "default", "web-node-a", "", "app", []string{"echo", "hello"})
	if err != nil || string(out) != "hello\n" {
		t.Fatalf("run echo = %q, %v", out, err)
	}
	if out, err := w.agent.RunInContainer(w.ctx, "default", "web-node-a", "", "app", []string{"fail", "now"}); err == nil || string(out) != "boom" {
		t.Fatalf("failing run = %q, %v; want its stderr and an error", out, err)
	}
	for _, tc := range []struct{ pod, uid, container string }{
		{"web-node-a", "", "nope"}, {"db", "", "app"}, {"web-node-a", "another-uid", "app"},
	} {
		if _, err := w.agent.RunInContainer(w.ctx, "default", tc.pod, tc.uid, tc.container, []string{"true"}); !errors.Is(err, server.ErrNotFound) {
			t.Errorf("run in %+v: %v, want ErrNotFound", tc, err)
		}
	}
}

// kubectl port-forward's SPDY protocol through the agent reaches the pod's scripted responder,
// bytes unchanged both ways.
func TestPortForwardThroughTheAgent(t *testing.T) {
	w := newWorld(t, &script.Script{Ports: []script.PortRule{{Port: 7, Echo: true}}})
	w.runUntil(5 * time.Second)
	base := w.serve()

	u, _ := url.Parse(base + "/portForward/default/web-node-a")
	transport, upgrader, err := spdy.RoundTripperFor(insecure)
	if err != nil {
		t.Fatal(err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	pf, err := portforward.New(dialer, []string{"0:7"}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	go pf.ForwardPorts()
	<-ready
	ports, err := pf.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	go conn.Write(data)
	got := make([]byte, len(data))
	if _, err := io.ReadFull(conn, got); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("echo through the forward: %v, equal %v", err, bytes.Equal(got, data))
	}
}

// kubectl attach through the agent streams the lines the container logs from then on.
func TestAttachThroughTheAgent(t *testing.T) {
	w := newWorld(t, &script.Script{Containers: []script.ContainerRule{{
		Match: script.ContainerMatch{Name: "app"},
		Logs:  &script.LogSpec{Lines: []string{"line {n}"}, Every: script.Duration(time.Second), Count: 1000},
	}}})
	w.runUntil(5 * time.Second)
	base := w.serve()

	u, _ := url.Parse(base + "/attach/default/web-node-a/app?output=1&error=1")
	e, err := remotecommand.NewSPDYExecutor(insecure, http.MethodPost, u)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	pr, pw := io.Pipe()
	go e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: pw, Stderr: io.Discard})
	lines := make(chan string)
	go func() {
		s := bufio.NewScanner(pr)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	var got []string
	for len(got) < 3 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the attach ended after %q", got)
			}
			got = append(got, l)
		case <-time.After(20 * time.Millisecond):
			w.mock.Add(time.Second) // the container logs a line a second of its clock
		case <-w.ctx.Done():
			t.Fatalf("attached lines: %q, want 3", got)
		}
	}
	first, err := strconv.Atoi(strings.TrimPrefix(got[0], "line "))
	if err != nil || got[1] != fmt.Sprintf("line %d", first+1) || got[2] != fmt.Sprintf("line %d", first+2) {
		t.Fatalf("attached lines %q, want consecutive ones", got)
	}
}
