// Package apptest starts the built orch-apiserver as a child process and reaches it over the TLS
// it serves with the certificate it writes itself: what the binary's tests (cmd/orch-apiserver)
// and the fault campaigns (cmd/orchchaos) share.
package apptest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/syncbuf"
)

// Options say how to start the server.
type Options struct {
	// Binary is the built orch-apiserver.
	Binary string
	// DataDir is its --data-dir; the certificate it serves is written under DataDir/pki.
	DataDir string
	// Port is its --secure-port on 127.0.0.1.
	Port int
	// Args come after --bind-address, --secure-port and --data-dir.
	Args []string
	// Dir is its working directory; empty is the caller's.
	Dir string
	// Ready is how long /readyz may take to answer ok, on Clock: a real process keeps the wall's
	// pace, so callers pass clock.New().
	Ready time.Duration
	Clock clock.Clock
	// ClientTimeout bounds each request of Server.Client.
	ClientTimeout time.Duration
}

// Server is orch-apiserver running as a child process.
type Server struct {
	Cmd *exec.Cmd
	URL string
	// Client trusts exactly the server's self-signed certificate.
	Client *http.Client
	// Output is its standard output and error.
	Output *syncbuf.Buffer
	// Exited is closed once the process has exited.
	Exited chan struct{}
}

// Start starts the server and waits until its /readyz answers ok. A server that exits first, or
// is not ready in time (then killed), is an error carrying its output.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Clock == nil {
		return nil, errors.New("apptest.Options.Clock is required: the clock that paces the wait for /readyz")
	}
	args := append([]string{"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(o.Port), "--data-dir", o.DataDir}, o.Args...)
	s := &Server{Cmd: exec.CommandContext(ctx, o.Binary, args...), URL: "https://127.0.0.1:" + strconv.Itoa(o.Port),
		Output: &syncbuf.Buffer{}, Exited: make(chan struct{})}
	s.Cmd.Dir = o.Dir
	s.Cmd.Stdout, s.Cmd.Stderr = s.Output, s.Output
	if err := s.Cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = s.Cmd.Wait(); close(s.Exited) }()
	deadline := o.Clock.Now().Add(o.Ready)
	for {
		select {
		case <-s.Exited:
			return nil, fmt.Errorf("orch-apiserver exited before it was ready (%v):\n%s", s.Cmd.ProcessState, s.Output.String())
		default:
		}
		if o.Clock.Now().After(deadline) {
			s.Kill()
			return nil, fmt.Errorf("orch-apiserver not ready within %v:\n%s", o.Ready, s.Output.String())
		}
		if s.Client == nil {
			s.Client, _ = TrustingClient(filepath.Join(o.DataDir, "pki", "apiserver.crt"), o.ClientTimeout)
		}
		if s.Client != nil {
			if resp, err := s.Client.Get(s.URL + "/readyz"); err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK && string(body) == "ok" {
					return s, nil
				}
			}
		}
		o.Clock.Sleep(50 * time.Millisecond)
	}
}

// Kill sends SIGKILL (kill -9) and waits for the process to be gone.
func (s *Server) Kill() {
	select {
	case <-s.Exited:
		return
	default:
	}
	_ = s.Cmd.Process.Kill()
	<-s.Exited
}

// TrustingClient is an HTTPS client that trusts exactly the certificate in certFile, with each
// request bounded by timeout.
func TrustingClient(certFile string, timeout time.Duration) (*http.Client, error) {
	pem, err := os.ReadFile(certFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("no certificate in " + certFile)
	}
	return &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}, nil
}
