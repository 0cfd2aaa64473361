package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	apiservertest "orch.io/orch/components/apiserver/app/apptest"
)

// The exhaustion campaign's /readyz probe runs in a process of its own (orchchaos --probe-readyz),
// as a monitor or a load balancer does: in the attackers' process, its goroutine waited behind
// their thousands (2,400 runnable at once while they dial), and its latencies were that process's
// scheduling as much as the server's.

// probeLine is one probe's answer, as the probe process writes it: when it was sent, how long it
// took, its status (or error), and where its time went.
type probeLine struct {
	sent    time.Time
	took    time.Duration
	status  string
	details string
}

func (p probeLine) String() string {
	return fmt.Sprintf("%d %d %s\t%s", p.sent.UnixNano(), p.took.Nanoseconds(), strings.ReplaceAll(p.status, "\t", " "), p.details)
}

func parseProbeLine(line string) (probeLine, error) {
	head, details, _ := strings.Cut(line, "\t")
	fields := strings.SplitN(head, " ", 3)
	if len(fields) != 3 {
		return probeLine{}, fmt.Errorf("probe: %q", line)
	}
	sent, err1 := strconv.ParseInt(fields[0], 10, 64)
	took, err2 := strconv.ParseInt(fields[1], 10, 64)
	if err1 != nil || err2 != nil {
		return probeLine{}, fmt.Errorf("probe: %q", line)
	}
	return probeLine{sent: time.Unix(0, sent), took: time.Duration(took), status: fields[2], details: details}, nil
}

// runProbe asks url's /readyz every probeEvery on one connection, kept alive and opened before it
// writes "ready", until in ends; one line per answer on out.
func runProbe(url, caFile string, in io.Reader, out io.Writer) error {
	c, err := apiservertest.TrustingClient(caFile, 10*time.Second)
	if err != nil {
		return err
	}
	c.Transport.(*http.Transport).ForceAttemptHTTP2 = true
	if _, err := getBody(c, url+"/readyz"); err != nil {
		return fmt.Errorf("the first /readyz: %w", err)
	}
	w := bufio.NewWriter(out)
	fmt.Fprintln(w, "ready")
	w.Flush()
	stop := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, in); close(stop) }()
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		var pt probeTrace
		t0 := time.Now()
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), pt.trace()), http.MethodGet, url+"/readyz", nil)
		resp, err := c.Do(req)
		line := probeLine{sent: t0, took: time.Since(t0)}
		if err != nil {
			line.status = err.Error()
		} else {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			line.status = strconv.Itoa(resp.StatusCode)
		}
		line.details = pt.describe(t0)
		fmt.Fprintln(w, line)
		w.Flush()
		time.Sleep(probeEvery)
	}
}

// probeProcess is the probe running beside the campaign.
type probeProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
}

// startProbe starts the probe process on srv and waits until its connection is open.
func startProbe(srv *server, dataDir string) (*probeProcess, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "--probe-readyz", srv.url, "--probe-ca", filepath.Join(dataDir, "pki", "apiserver.crt"))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &probeProcess{cmd: cmd, stdin: stdin, lines: bufio.NewScanner(stdout)}
	if !p.lines.Scan() || p.lines.Text() != "ready" {
		p.stop()
		return nil, fmt.Errorf("the probe process did not start: %q %v", p.lines.Text(), p.lines.Err())
	}
	return p, nil
}

// each calls f with every answer until the process ends.
func (p *probeProcess) each(f func(probeLine)) error {
	for p.lines.Scan() {
		line, err := parseProbeLine(p.lines.Text())
		if err != nil {
			return err
		}
		f(line)
	}
	return p.lines.Err()
}

// stop ends the probe: it finishes its current probe, writes it, and exits.
func (p *probeProcess) stop() {
	p.stdin.Close()
}

func (p *probeProcess) wait() error { return p.cmd.Wait() }

// probeTrace is when a /readyz probe's steps happened, as its client saw them.
type probeTrace struct {
	gotConn, handshakeStart, handshakeDone, wrote, firstByte time.Time
	reused                                                   bool
}

func (p *probeTrace) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn:              func(i httptrace.GotConnInfo) { p.gotConn, p.reused = time.Now(), i.Reused },
		TLSHandshakeStart:    func() { p.handshakeStart = time.Now() },
		TLSHandshakeDone:     func(tls.ConnectionState, error) { p.handshakeDone = time.Now() },
		WroteRequest:         func(httptrace.WroteRequestInfo) { p.wrote = time.Now() },
		GotFirstResponseByte: func() { p.firstByte = time.Now() },
	}
}

// describe says where a probe started at t0 spent its time: the connection (a new one's TLS
// handshake), the request written, the answer's first byte.
func (p *probeTrace) describe(t0 time.Time) string {
	at := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.Sub(t0).Round(time.Millisecond).String()
	}
	conn := "connection reused"
	if !p.reused {
		conn = "new connection, TLS handshake " + at(p.handshakeStart) + " to " + at(p.handshakeDone)
	}
	return fmt.Sprintf("%s, connection at %s, request written at %s, first byte at %s", conn, at(p.gotConn), at(p.wrote), at(p.firstByte))
}
