package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"
)

// streamSteps speak kubectl's streaming protocols (SPDY; WebSocket v4.channel.k8s.io, what a
// runtime's streaming server speaks) to the agent's HTTPS server, through client-go as kubectl does.
func streamSteps() []StepDef {
	return []StepDef{
		{`^an exec of "seq 1 (\d+)" in container "([^"]*)" of pod "([^"]*)" over (SPDY|WebSocket) writes the numbers in order$`, func(w *World) any { return w.execSequence }},
		{`^an exec of "([^"]*)" in container "([^"]*)" of pod "([^"]*)" over (SPDY|WebSocket) exits with code (\d+)$`, func(w *World) any { return w.execExits }},
		{`^an exec of "cat" in container "([^"]*)" of pod "([^"]*)" left without input is closed within (\d+)s$`, func(w *World) any { return w.execIdleClosed }},
		{`^a port-forward to port (\d+) of pod "([^"]*)" echoes (\d+) MiB unchanged$`, func(w *World) any { return w.portForwardEchoes }},
		{`^an exec of "seq 1 (\d+)" in pod "([^"]*)" through the API server over (SPDY|WebSocket) writes the numbers in order$`, func(w *World) any { return w.apiExecSequence }},
		{`^a port-forward to port (\d+) of pod "([^"]*)" through the API server over (SPDY|WebSocket) echoes (\d+) MiB unchanged$`, func(w *World) any { return w.apiPortForwardEchoes }},
		{`^the log of pod "([^"]*)" through the API server ends with "([^"]*)"$`, func(w *World) any { return w.apiLogEndsWith }},
		{`^GET "([^"]*)" through the API server answers 200 with "([^"]*)"$`, func(w *World) any { return w.apiGetContains }},
	}
}

// apiConfig reaches the suite's API server as the profile's administrator.
func (w *World) apiConfig() (*rest.Config, error) {
	if _, err := w.t.APIServer(); err != nil {
		return nil, err
	}
	return &rest.Config{Host: w.t.URL(""), BearerToken: w.t.Profile.APIServer.Token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: w.t.Expand(w.t.Profile.APIServer.CAFile)}}, nil
}

// apiExecSequence runs seq in the pod's only container through pods/exec, as kubectl exec does.
func (w *World) apiExecSequence(n int, pod, protocol string) error {
	config, err := w.apiConfig()
	if err != nil {
		return err
	}
	q := url.Values{"command": {"seq", "1", strconv.Itoa(n)}, "stdout": {"true"}, "stderr": {"true"}}
	u, err := url.Parse(w.t.URL("/api/v1/namespaces/default/pods/" + pod + "/exec?" + q.Encode()))
	if err != nil {
		return err
	}
	var e remotecommand.Executor
	if protocol == "WebSocket" {
		e, err = remotecommand.NewWebSocketExecutor(config, http.MethodGet, u.String())
	} else {
		e, err = remotecommand.NewSPDYExecutor(config, http.MethodPost, u)
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: io.Discard}); err != nil {
		return fmt.Errorf("exec of seq 1 %d through the API server: %w\n%s", n, err, w.agentOutput())
	}
	return sameSequence(out.Bytes(), n)
}

func sameSequence(got []byte, n int) error {
	var want bytes.Buffer
	for i := 1; i <= n; i++ {
		want.WriteString(strconv.Itoa(i))
		want.WriteByte('\n')
	}
	if sha256.Sum256(got) != sha256.Sum256(want.Bytes()) {
		return fmt.Errorf("exec of seq 1 %d wrote %d bytes that differ from the %d of the sequence", n, len(got), want.Len())
	}
	return nil
}

// apiPortForwardEchoes forwards through pods/portforward, over SPDY or tunnelled in WebSocket.
func (w *World) apiPortForwardEchoes(port int, pod, protocol string, mib int) error {
	config, err := w.apiConfig()
	if err != nil {
		return err
	}
	u, err := url.Parse(w.t.URL("/api/v1/namespaces/default/pods/" + pod + "/portforward"))
	if err != nil {
		return err
	}
	var dialer httpstream.Dialer
	if protocol == "WebSocket" {
		dialer, err = portforward.NewSPDYOverWebsocketDialerForStreaming(u, config)
	} else {
		var transport http.RoundTripper
		var upgrader spdy.Upgrader
		transport, upgrader, err = spdy.RoundTripperFor(config)
		dialer = spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	}
	if err != nil {
		return err
	}
	return forwardEchoes(dialer, port, mib)
}

func (w *World) apiLogEndsWith(pod, suffix string) error {
	return eventually(settle, func() error {
		code, body, err := w.apiDo(http.MethodGet, "/api/v1/namespaces/default/pods/"+pod+"/log", nil)
		if err != nil {
			return err
		}
		if code != http.StatusOK || !strings.HasSuffix(strings.TrimSpace(string(body)), suffix) {
			return fmt.Errorf("the log of pod %s: %d %q, want it to end with %q", pod, code, body, suffix)
		}
		return nil
	})
}

// apiGetContains waits for the answer, as what it reads (a node's pods, events) may lag.
func (w *World) apiGetContains(path, text string) error {
	return eventually(settle, func() error {
		code, body, err := w.apiDo(http.MethodGet, path, nil)
		if err != nil {
			return err
		}
		if code != http.StatusOK || !strings.Contains(string(body), text) {
			return fmt.Errorf("GET %s: %d %.300q, want 200 with %q", path, code, body, text)
		}
		return nil
	})
}

// streamConfig reaches the HTTPS server with the scenario's client credentials.
func (w *World) streamConfig() (*rest.Config, error) {
	c := &rest.Config{TLSClientConfig: rest.TLSClientConfig{Insecure: true}, BearerToken: w.node().token}
	if cert := w.node().clientCert; cert != nil {
		key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
		if err != nil {
			return nil, err
		}
		c.CertData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]})
		c.KeyData = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key})
	}
	return c, nil
}

// exec runs argv in the container through the HTTPS server's /exec.
func (w *World) exec(ctx context.Context, pod, container, protocol string, argv []string, opts remotecommand.StreamOptions) error {
	q := url.Values{"command": argv}
	if opts.Stdin != nil {
		q.Set("input", "1")
	}
	if opts.Stdout != nil {
		q.Set("output", "1")
	}
	if opts.Stderr != nil {
		q.Set("error", "1")
	}
	u, err := url.Parse(fmt.Sprintf("https://127.0.0.1:%d/exec/default/%s/%s?%s", w.node().ports["HTTPS"], pod, container, q.Encode()))
	if err != nil {
		return err
	}
	config, err := w.streamConfig()
	if err != nil {
		return err
	}
	var e remotecommand.Executor
	if protocol == "WebSocket" {
		e, err = remotecommand.NewWebSocketExecutorForProtocols(config, http.MethodGet, u.String(), "v4.channel.k8s.io")
	} else {
		e, err = remotecommand.NewSPDYExecutor(config, http.MethodPost, u)
	}
	if err != nil {
		return err
	}
	return e.StreamWithContext(ctx, opts)
}

func (w *World) execSequence(n int, container, pod, protocol string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := w.exec(ctx, pod, container, protocol, []string{"seq", "1", strconv.Itoa(n)}, remotecommand.StreamOptions{Stdout: &out, Stderr: io.Discard}); err != nil {
		return fmt.Errorf("exec of seq 1 %d: %w\n%s", n, err, w.agentOutput())
	}
	return sameSequence(out.Bytes(), n)
}

func (w *World) execExits(command, container, pod, protocol string, code int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := w.exec(ctx, pod, container, protocol, shellWords(command), remotecommand.StreamOptions{Stdout: io.Discard, Stderr: io.Discard})
	got := 0
	var exit exec.CodeExitError
	switch {
	case errors.As(err, &exit):
		got = exit.Code
	case err != nil:
		return fmt.Errorf("exec of %q: %w", command, err)
	}
	if got != code {
		return fmt.Errorf("exec of %q exited with code %d, want %d", command, got, code)
	}
	return nil
}

// execIdleClosed opens an exec of cat with an input that never sends and waits for the stream to
// end: only the agent's idle timeout ends it.
func (w *World) execIdleClosed(container, pod string, within int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(within)*time.Second)
	defer cancel()
	stdin, never := io.Pipe()
	defer never.Close()
	done := make(chan error, 1)
	go func() {
		done <- w.exec(context.Background(), pod, container, "SPDY", []string{"cat"}, remotecommand.StreamOptions{Stdin: stdin, Stdout: io.Discard, Stderr: io.Discard})
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("an exec stream without traffic was still open after %ds", within)
	}
}

// portForwardEchoes forwards a local port to the pod's port through /portForward over SPDY and
// checks that what comes back is what was sent.
func (w *World) portForwardEchoes(port int, pod string, mib int) error {
	u, err := url.Parse(fmt.Sprintf("https://127.0.0.1:%d/portForward/default/%s", w.node().ports["HTTPS"], pod))
	if err != nil {
		return err
	}
	config, err := w.streamConfig()
	if err != nil {
		return err
	}
	transport, upgrader, err := spdy.RoundTripperFor(config)
	if err != nil {
		return err
	}
	return forwardEchoes(spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, u), port, mib)
}

// forwardEchoes forwards a local port to port through dialer and checks that mib MiB sent come
// back unchanged.
func forwardEchoes(dialer httpstream.Dialer, port, mib int) error {
	stop, ready := make(chan struct{}), make(chan struct{})
	defer close(stop)
	pf, err := portforward.NewForStreaming(dialer, []string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		return err
	}
	failed := make(chan error, 1)
	go func() { failed <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-failed:
		return fmt.Errorf("port-forward: %w", err)
	case <-time.After(10 * time.Second):
		return errors.New("port-forward not ready after 10s")
	}
	ports, err := pf.GetPorts()
	if err != nil {
		return err
	}
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", ports[0].Local), 5*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(60 * time.Second))
	data := bytes.Repeat([]byte("0123456789abcdef"), mib<<16)
	go conn.Write(data)
	got := make([]byte, len(data))
	if _, err := io.ReadFull(conn, got); err != nil {
		return fmt.Errorf("reading the echo: %w", err)
	}
	if !bytes.Equal(got, data) {
		return fmt.Errorf("the %d MiB echoed through the forward differ from those sent", mib)
	}
	return nil
}

// shellWords splits a command at spaces outside single quotes, which it removes.
func shellWords(command string) []string {
	var words []string
	var word strings.Builder
	quoted, inWord := false, false
	for _, r := range command {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, word.String())
				word.Reset()
				inWord = false
			}
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, word.String())
	}
	return words
}
