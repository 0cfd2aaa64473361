package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/cmd/internal/kubepeer"
	"orch.io/orch/components/freeport"
	"orch.io/orch/components/periodic"
)

// target is the server under test and how to reach it.
type target struct {
	url string
	tls *tls.Config
	// group serves the events: events.orch.io, or events.k8s.io on Kubernetes' API server.
	group string
	// token, when set, is sent as a bearer token.
	token string
	// namespace, when set, makes sure a namespace exists before a benchmark writes to it (Kubernetes
	// refuses writes to a namespace that does not exist).
	namespace func(ctx context.Context, ns string) error
	// cpu reads the server's CPU time so far; nil when the server is not this tool's child.
	cpu func() (time.Duration, error)
	// rss reads the server process's resident memory in MiB; nil when it is not this tool's child.
	rss func() (float64, error)
}

// cpuPer returns a stop function giving the server's CPU time since the call divided by ops, in
// milliseconds; 0 when unknown. CPU per operation is what a busy machine disturbs least.
func (t target) cpuPer() func(ops int) float64 {
	if t.cpu == nil {
		return func(int) float64 { return 0 }
	}
	before, err := t.cpu()
	return func(ops int) float64 {
		after, err2 := t.cpu()
		if err != nil || err2 != nil || ops == 0 {
			return 0
		}
		return ms((after - before) / time.Duration(ops))
	}
}

// newClient returns a client with its own transport, so each simulated client keeps its own
// keep-alive connection (HTTP/2 when the server offers it, as orch-apiserver does).
func (t target) newClient() *http.Client {
	var rt http.RoundTripper = &http.Transport{
		TLSClientConfig:     t.tls.Clone(),
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     time.Minute,
	}
	if t.token != "" {
		rt = bearer{token: t.token, next: rt}
	}
	return &http.Client{Transport: rt}
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// CloseIdleConnections lets the clients' callers release connections through the wrapper.
func (b bearer) CloseIdleConnections() {
	if c, ok := b.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// prepare makes sure ns exists where the target needs it to.
func (t target) prepare(ctx context.Context, ns string) error {
	if t.namespace == nil {
		return nil
	}
	return t.namespace(ctx, ns)
}

func tlsConfig(caFile string, insecure bool) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure}
	if caFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("--ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca %s: no PEM certificate in it", caFile)
	}
	cfg.RootCAs = pool
	return cfg, nil
}

// waitReady polls /readyz every 100ms until it answers 200 or the timeout passes.
func waitReady(ctx context.Context, t target, timeout time.Duration) error {
	c := t.newClient()
	defer c.CloseIdleConnections()
	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	err := periodic.Every(wait, clock.New(), 100*time.Millisecond, true, func(context.Context) bool {
		last = ready(ctx, c, t.url)
		return last == nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return fmt.Errorf("%s not ready after %v: %w", t.url, timeout, last)
}

// ready asks url's /readyz once.
func ready(ctx context.Context, c *http.Client, url string) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz answered %d", resp.StatusCode)
	}
	return nil
}

// process is an API server this tool started; etcd, when set, is the etcd it runs on, whose memory
// and CPU count with it.
type process struct {
	*kubepeer.Process
	etcd *process
}

// startServer runs bin on a free loopback port with a fresh data directory and waits until it is
// ready; its log goes to a file in that directory.
func startServer(ctx context.Context, bin string) (*process, target, error) {
	port, err := freeport.Get()
	if err != nil {
		return nil, target{}, err
	}
	dir, err := os.MkdirTemp("", "orchload-")
	if err != nil {
		return nil, target{}, err
	}
	p := &process{Process: &kubepeer.Process{Dir: dir, LogPath: filepath.Join(dir, "apiserver.log"), Done: make(chan struct{})}}
	logFile, err := os.Create(p.LogPath)
	if err != nil {
		return nil, target{}, errors.Join(err, os.RemoveAll(dir))
	}
	defer logFile.Close()
	p.Cmd = exec.Command(bin, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--data-dir", filepath.Join(dir, "data"))
	p.Cmd.Stdout, p.Cmd.Stderr = logFile, logFile
	if err := p.Cmd.Start(); err != nil {
		return nil, target{}, errors.Join(fmt.Errorf("--apiserver-bin: %w", err), os.RemoveAll(dir))
	}
	go func() { _ = p.Cmd.Wait(); close(p.Done) }()

	// The self-signed certificate appears once the server has written it; until then the address
	// cannot be verified, so wait for the file first.
	caFile := filepath.Join(dir, "data", "pki", "apiserver.crt")
	t := target{url: "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), group: "events.orch.io"}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(caFile); err == nil {
			break
		}
		select {
		case <-p.Done:
			return nil, t, p.failed(errors.New("orch-apiserver exited during start-up"))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, t, p.failed(errors.New("no serving certificate after 60s"))
		}
	}
	if t.tls, err = tlsConfig(caFile, false); err != nil {
		return nil, t, p.failed(err)
	}
	if err := waitReady(ctx, t, time.Until(deadline)); err != nil {
		return nil, t, p.failed(err)
	}
	t.cpu, t.rss = p.cpuTime, p.rssMiB
	return p, t, nil
}

// rssMiB is the process's resident memory.
func (p *process) rssMiB() (float64, error) {
	m, err := p.memory()
	return m.RSSMiB, err
}

// failed stops the process and returns err with the tail of the server's log.
func (p *process) failed(err error) error {
	p.stop()
	return fmt.Errorf("%w; log:\n%s", err, p.LogTail(20))
}

// stop ends the server (SIGTERM, then SIGKILL after 15s), then its etcd, and removes its directory.
func (p *process) stop() {
	p.End()
	if p.etcd != nil {
		p.etcd.stop()
	}
	_ = os.RemoveAll(p.Dir)
}

// memory reads the server's resident set from /proc/<pid>/status, in MiB: VmRSS, its peak VmHWM,
// and the part of it that is anonymous (heap, stacks) rather than file pages such as etcd's mmapped
// database.
func (p *process) memory() (memoryResult, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Cmd.Process.Pid))
	if err != nil {
		return memoryResult{}, err
	}
	var m memoryResult
	fields := map[string]*float64{"VmRSS": &m.RSSMiB, "VmHWM": &m.PeakRSSMiB, "RssAnon": &m.AnonMiB}
	for line := range strings.Lines(string(b)) {
		name, value, _ := strings.Cut(line, ":")
		into, ok := fields[name]
		if !ok {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 64)
		if err != nil {
			return memoryResult{}, fmt.Errorf("/proc status %s: %w", name, err)
		}
		*into = kb / 1024
	}
	if m.RSSMiB == 0 {
		return memoryResult{}, errors.New("no VmRSS in /proc status")
	}
	if p.etcd != nil {
		e, err := p.etcd.memory()
		if err != nil {
			return memoryResult{}, fmt.Errorf("etcd: %w", err)
		}
		m.RSSMiB, m.PeakRSSMiB, m.AnonMiB = m.RSSMiB+e.RSSMiB, m.PeakRSSMiB+e.PeakRSSMiB, m.AnonMiB+e.AnonMiB
	}
	return m, nil
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every Linux the tool runs on.
const clockTicks = 100

// cpuTime is the user plus system time the server has used, from /proc/<pid>/stat.
func (p *process) cpuTime() (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces; the fields after it start with state (field 3), so utime
	// and stime (fields 14 and 15) are at 11 and 12.
	_, rest, _ := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", p.Cmd.Process.Pid)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: %w", p.Cmd.Process.Pid, err)
		}
		ticks += n
	}
	total := time.Duration(ticks) * time.Second / clockTicks
	if p.etcd != nil {
		e, err := p.etcd.cpuTime()
		if err != nil {
			return 0, fmt.Errorf("etcd: %w", err)
		}
		total += e
	}
	return total, nil
}
