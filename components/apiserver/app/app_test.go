package app_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"k8s.io/client-go/rest"

	"orch.io/orch/components/apiserver/app"
	"orch.io/orch/components/freeport"
)

// testServer is a real orch-apiserver started with app.Run: HTTPS on 127.0.0.1 over an embedded
// etcd under a test directory, on the real clock.
type testServer struct {
	addr    string
	dataDir string
	// stop ends Run's context and waits (at most 30s) for Run to return, answering how long that
	// took and what it returned. It is safe to call more than once.
	stop func() (time.Duration, error)
}

// startServer runs app.Run until the test ends. The server is stopped, and Run's return checked,
// in t.Cleanup, after every cleanup registered later (informers, watches) has run.
// tune, if given, adjusts the options before Run.
func startServer(t *testing.T, tune ...func(*app.Options)) *testServer {
	t.Helper()
	dataDir := t.TempDir()
	for attempt := 0; ; attempt++ {
		addr, stop, err := tryStart(t, dataDir, freeport.For(t), tune)
		if err == nil {
			return &testServer{addr: addr, dataDir: dataDir, stop: stop}
		}
		// Only a lost race for the port is worth another try.
		if attempt == 0 && strings.Contains(err.Error(), "--secure-port") && strings.Contains(err.Error(), "address already in use") {
			t.Logf("port taken before the server bound it, retrying: %v", err)
			continue
		}
		t.Fatalf("app.Run: %v", err)
	}
}

func tryStart(t *testing.T, dataDir string, port int, tune []func(*app.Options)) (string, func() (time.Duration, error), error) {
	t.Helper()
	o := app.NewOptions()
	o.BindAddress = "127.0.0.1"
	o.SecurePort = port
	o.DataDir = dataDir
	for _, f := range tune {
		f(o)
	}

	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- app.Run(ctx, o, clock.New(), func(addr string) { ready <- addr }) }()

	select {
	case addr := <-ready:
		var once sync.Once
		var runErr error
		var took time.Duration
		stop := func() (time.Duration, error) {
			once.Do(func() {
				start := time.Now()
				cancel()
				select {
				case runErr = <-done:
				case <-time.After(30 * time.Second):
					runErr = errors.New("app.Run did not return within 30s of its context ending")
				}
				took = time.Since(start)
			})
			return took, runErr
		}
		t.Cleanup(func() {
			if _, err := stop(); err != nil {
				t.Errorf("app.Run after its context ended: %v, want nil", err)
			}
		})
		return addr, stop, nil
	case err := <-done:
		cancel()
		if err == nil {
			err = errors.New("app.Run returned nil before serving")
		}
		return "", nil, err
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("app.Run did not call ready within 60s")
		return "", nil, nil
	}
}

// certFile is the self-signed serving certificate the server wrote under its data directory.
func (s *testServer) certFile() string {
	return filepath.Join(s.dataDir, "pki", "apiserver.crt")
}

// restConfig is a client-go configuration that verifies the server against its own certificate.
func (s *testServer) restConfig() *rest.Config {
	return &rest.Config{
		Host:            "https://" + s.addr,
		TLSClientConfig: rest.TLSClientConfig{CAFile: s.certFile()},
		QPS:             -1, // no client-side rate limiting: the tests make bursts of requests
	}
}

// send sends method to url through client, with token as its bearer when given and body (JSON)
// when not nil, failing the test when no answer comes. It answers the response, whose body is
// read and closed, and that body.
func send(t *testing.T, client *http.Client, method, url, token string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}
