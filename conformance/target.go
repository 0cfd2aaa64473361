package conformance

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// readyTimeout bounds how long a started API server may take to answer.
const readyTimeout = 60 * time.Second

// commandTimeout bounds one run of the agent or the configuration checker.
const commandTimeout = 30 * time.Second

// Target is a profile made live: binaries built, the API server started on first use.
type Target struct {
	Profile *Profile
	root    string
	work    string
	port    int

	startOnce sync.Once
	startErr  error
	server    *exec.Cmd
	exited    chan struct{} // closed when a started server has exited
	serverLog *os.File
	client    *http.Client

	helpOnce sync.Once
	help     *Help
	helpErr  error
}

// OpenTarget loads a profile and builds its binaries. root is the module root; work is a fresh
// directory owned by the target until Close.
func OpenTarget(profilePath, root string) (*Target, error) {
	p, err := LoadProfile(profilePath)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "orch-conformance-")
	if err != nil {
		return nil, err
	}
	t := &Target{Profile: p, root: root, work: work}
	if t.port, err = freePort(); err != nil {
		t.Close()
		return nil, err
	}
	if len(p.Build) > 0 {
		args := append([]string{"build", "-o", t.bin() + string(filepath.Separator)}, p.Build...)
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Close()
			return nil, fmt.Errorf("building %s: %v\n%s", strings.Join(p.Build, " "), err, out)
		}
	}
	return t, nil
}

func (t *Target) bin() string { return filepath.Join(t.work, "bin") }

// Expand fills the placeholders of a profile string.
func (t *Target) Expand(s string) string {
	return strings.NewReplacer("{root}", t.root, "{bin}", t.bin(), "{work}", t.work, "{port}", strconv.Itoa(t.port)).Replace(s)
}

func (t *Target) expandAll(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = t.Expand(s)
	}
	return out
}

// Has says whether the target has the named component.
func (t *Target) Has(component string) bool {
	for _, c := range t.Profile.Components() {
		if c == component {
			return true
		}
	}
	return false
}

// Close stops what the target started and removes its work directory.
func (t *Target) Close() {
	if t.server != nil && t.server.Process != nil {
		// SIGTERM first, so the server can close its store; a kill if it does not stop in time.
		_ = t.server.Process.Signal(os.Interrupt)
		select {
		case <-t.exited:
		case <-time.After(10 * time.Second):
			_ = t.server.Process.Kill()
			<-t.exited
		}
	}
	if t.serverLog != nil {
		t.serverLog.Close()
	}
	os.RemoveAll(t.work)
}

// APIServer starts the API server on first use (when the profile says how) and returns an HTTPS
// client that trusts it.
func (t *Target) APIServer() (*http.Client, error) {
	t.startOnce.Do(func() { t.startErr = t.startAPIServer() })
	return t.client, t.startErr
}

func (t *Target) startAPIServer() error {
	a := t.Profile.APIServer
	if a == nil {
		return errors.New("the target has no API server")
	}
	if s := a.Start; s != nil {
		for name, content := range s.Files {
			if err := os.WriteFile(filepath.Join(t.work, name), []byte(t.Expand(content)), 0o600); err != nil {
				return err
			}
		}
		log, err := os.Create(filepath.Join(t.work, "apiserver.log"))
		if err != nil {
			return err
		}
		t.serverLog = log
		args := t.expandAll(s.Command)
		t.server = exec.Command(args[0], args[1:]...)
		t.server.Stdout, t.server.Stderr = log, log
		if err := t.server.Start(); err != nil {
			return err
		}
		t.exited = make(chan struct{})
		go func() { _ = t.server.Wait(); close(t.exited) }()
	}
	return t.waitReady()
}

// waitReady polls the API group until it answers 200; a started server that exits is an error
// carrying its log.
func (t *Target) waitReady() error {
	a := t.Profile.APIServer
	deadline := time.Now().Add(readyTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-t.exited:
			return fmt.Errorf("the API server exited while starting:\n%s", t.serverLogTail())
		default:
		}
		if t.client == nil {
			t.client, last = newClient(t.Expand(a.CAFile))
		}
		if t.client != nil {
			last = t.probe()
			if last == nil {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("the API server did not answer within %s: %v\n%s", readyTimeout, last, t.serverLogTail())
}

func (t *Target) probe() error {
	req, err := http.NewRequest(http.MethodGet, t.URL(t.GroupPath()), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+t.Profile.APIServer.Token)
	resp, err := t.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", t.GroupPath(), resp.Status)
	}
	return nil
}

func (t *Target) serverLogTail() string {
	if t.serverLog == nil {
		return ""
	}
	data, _ := os.ReadFile(t.serverLog.Name())
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// newClient trusts the CA in caFile, which exists only once a started server has written it.
func newClient(caFile string) (*http.Client, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	return &http.Client{
		Timeout:   commandTimeout,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}, nil
}

// URL is the absolute URL of a path on the API server.
func (t *Target) URL(path string) string {
	return strings.TrimRight(t.Expand(t.Profile.APIServer.BaseURL), "/") + path
}

// GroupPath is /apis/<group>/<version>.
func (t *Target) GroupPath() string {
	a := t.Profile.APIServer
	return "/apis/" + a.Group + "/" + a.Version
}

// Result is what a command printed and how it exited.
type Result struct {
	Code   int
	Stdout string
	Stderr string
}

// Output is stdout and stderr together.
func (r Result) Output() string { return r.Stdout + r.Stderr }

// Run runs a command of the target in dir with a time limit.
func (t *Target) Run(dir string, command []string, args ...string) (Result, error) {
	argv := append(t.expandAll(command), args...)
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := Result{Stdout: out.String(), Stderr: errb.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && ctx.Err() == nil:
		r.Code = exit.ExitCode()
	case err != nil:
		return r, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return r, nil
}

// AgentHelp runs the agent's --help once and parses it.
func (t *Target) AgentHelp() (*Help, error) {
	t.helpOnce.Do(func() {
		var r Result
		r, t.helpErr = t.Run(t.work, t.Profile.Agent.Command, "--help")
		if t.helpErr == nil && r.Code != 0 {
			t.helpErr = fmt.Errorf("--help exited %d: %s", r.Code, r.Stderr)
		}
		if t.helpErr == nil {
			t.help = ParseHelp(r.Output())
		}
	})
	return t.help, t.helpErr
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// drain reads and closes a response body.
func drain(r io.ReadCloser) ([]byte, error) {
	defer r.Close()
	return io.ReadAll(r)
}
