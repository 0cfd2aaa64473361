package target

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"orch.io/orch/components/freeport"
	"orch.io/orch/conformance/catalog"
)

// ReadyTimeout bounds how long a started API server, or another program of the target, may take to
// answer.
const ReadyTimeout = 60 * time.Second

// CommandTimeout bounds one run of the agent or the configuration checker, and a step's wait for
// what one of the target's programs does.
const CommandTimeout = 30 * time.Second

// Target is a profile made live: binaries built, the API server started on first use.
type Target struct {
	Profile *Profile
	root    string
	work    string
	port    int

	// scenarios admits scenarios tagged @concurrent side by side and every other one alone.
	scenarios sync.RWMutex

	startOnce sync.Once
	startErr  error
	server    *Server // the suite's API server, when the profile starts one
	client    *http.Client

	helpOnce sync.Once
	help     *Help
	helpErr  error
}

// OpenTarget loads a profile and builds its binaries. root is the module root; work is a fresh
// directory owned by the target until Close.
func OpenTarget(profilePath, root string) (*Target, error) {
	p, err := loadProfile(profilePath)
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "orch-conformance-")
	if err != nil {
		return nil, err
	}
	t := New(p, root, work)
	if t.port, err = freeport.Get(); err != nil {
		t.Close()
		return nil, err
	}
	if len(p.Build) > 0 {
		args := append([]string{"build", "-o", t.Bin() + string(filepath.Separator)}, p.Build...)
		cmd := exec.Command("go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Close()
			return nil, fmt.Errorf("building %s: %v\n%s", strings.Join(p.Build, " "), err, out)
		}
	}
	if err := t.checkCommands(); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// New is a target of a loaded profile, with root the module root and work its work directory, that
// builds nothing and has started nothing yet.
func New(p *Profile, root, work string) *Target {
	return &Target{Profile: p, root: root, work: work}
}

// checkCommands finds the program each of the profile's commands starts, so a wrong path is said
// once, by its key, before any scenario runs.
func (t *Target) checkCommands() error {
	p := t.Profile
	commands := map[string][]string{}
	if p.APIServer != nil && p.APIServer.Start != nil {
		commands["apiserver.start.command"] = p.APIServer.Start.Command
	}
	if p.ConfigCheck != nil && len(p.ConfigCheck.Command) > 0 {
		commands["configCheck.command"] = p.ConfigCheck.Command
	}
	if p.Agent != nil {
		commands["agent.command"] = p.Agent.Command
	}
	if p.Runtime != nil {
		commands["runtime.command"] = p.Runtime.Command
	}
	if p.Simulator != nil {
		commands["simulator.command"] = p.Simulator.Command
	}
	var problems []string
	for _, key := range slices.Sorted(maps.Keys(commands)) {
		program := t.Expand(commands[key][0])
		if _, err := exec.LookPath(program); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %s is not a program this machine can run: %v", key, program, err))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("profile %s:\n  %s", p.Name, strings.Join(problems, "\n  "))
	}
	return nil
}

// Admit waits until a scenario with these tags may run, and returns what ends its turn.
func (t *Target) Admit(tags []string) (release func()) {
	for _, tag := range tags {
		if tag == catalog.ConcurrentTag {
			t.scenarios.RLock()
			return t.scenarios.RUnlock
		}
	}
	t.scenarios.Lock()
	return t.scenarios.Unlock
}

// Bin is where the profile's build puts the programs.
func (t *Target) Bin() string { return filepath.Join(t.work, "bin") }

// Work is the target's work directory, under which each scenario gets a directory of its own.
func (t *Target) Work() string { return t.work }

// Expand fills the placeholders of a profile string.
func (t *Target) Expand(s string) string { return t.expandFor(s, t.work, t.port) }

// expandFor fills the placeholders for a server of its own: work directory and port.
func (t *Target) expandFor(s, work string, port int) string {
	return strings.NewReplacer("{root}", t.root, "{bin}", t.Bin(), "{work}", work, "{port}", strconv.Itoa(port)).Replace(s)
}

// ExpandAll fills the placeholders of each string of a profile command.
func (t *Target) ExpandAll(in []string) []string {
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
	if t.server != nil {
		t.server.Stop()
	}
	os.RemoveAll(t.work)
}

// APIServer starts the suite's API server on first use (when the profile says how) and returns an
// HTTPS client that trusts it.
func (t *Target) APIServer() (*http.Client, error) {
	t.startOnce.Do(func() { t.startErr = t.startSuiteServer() })
	return t.client, t.startErr
}

func (t *Target) startSuiteServer() error {
	a := t.Profile.APIServer
	if a == nil {
		return errors.New("the target has no API server")
	}
	if a.Start == nil {
		var err error
		deadline := time.Now().Add(ReadyTimeout)
		for {
			if t.client, err = newClient(t.Expand(a.CAFile)); err == nil {
				if err = t.probeReady(t.client, strings.TrimRight(t.Expand(a.BaseURL), "/"), nil); err == nil {
					return nil
				}
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the API server at %s does not answer: %w", t.Expand(a.BaseURL), err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	s, failed, port, err := t.StartOnFreePort(t.work, a.Start.Args)
	if err != nil {
		return err
	}
	t.port = port
	if failed != nil {
		return fmt.Errorf("the API server exited %d while starting:\n%s", failed.Code, failed.Output())
	}
	t.server, t.client = s, s.Client
	return nil
}

// Server is an API server the run started.
type Server struct {
	Client  *http.Client
	BaseURL string
	// CAFile holds the CA the server's certificate chains to.
	CAFile string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has exited
	log    *os.File
}

// StartOnFreePort starts an API server (see startServer) on a free port, choosing another when the
// chosen one is taken by another process before the server binds it.
func (t *Target) StartOnFreePort(work string, args []string) (*Server, *Result, int, error) {
	for attempt := 0; ; attempt++ {
		port, err := freeport.Get()
		if err != nil {
			return nil, nil, 0, err
		}
		s, failed, err := t.startServer(work, port, args)
		if attempt < 2 && err == nil && failed != nil && strings.Contains(failed.Output(), "address already in use") {
			continue
		}
		return s, failed, port, err
	}
}

// startServer starts an API server with the profile's start command followed by args, placeholders
// filled for work and port, and waits until it answers. A server that exits first is not an error:
// its exit code and output come back as a Result, for scenarios about refusing to start.
func (t *Target) startServer(work string, port int, args []string) (*Server, *Result, error) {
	a := t.Profile.APIServer
	for name, content := range a.Start.Files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(t.expandFor(content, work, port)), 0o600); err != nil {
			return nil, nil, err
		}
	}
	log, err := os.Create(filepath.Join(work, "apiserver.log"))
	if err != nil {
		return nil, nil, err
	}
	argv := append(append([]string{}, a.Start.Command...), args...)
	for i := range argv {
		argv[i] = t.expandFor(argv[i], work, port)
	}
	s := &Server{BaseURL: t.expandFor(a.BaseURL, work, port), cmd: exec.Command(argv[0], argv[1:]...), exited: make(chan struct{}), log: log}
	s.cmd.Stdout, s.cmd.Stderr = log, log
	if err := s.cmd.Start(); err != nil {
		log.Close()
		return nil, nil, err
	}
	go func() { _ = s.cmd.Wait(); close(s.exited) }()

	caFile := t.expandFor(a.CAFile, work, port)
	s.CAFile = caFile
	deadline := time.Now().Add(ReadyTimeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.exited:
			out, _ := os.ReadFile(log.Name())
			log.Close()
			return nil, &Result{Code: s.cmd.ProcessState.ExitCode(), Stderr: string(out)}, nil
		default:
		}
		if s.Client == nil {
			s.Client, last = newClient(caFile)
		}
		if s.Client != nil {
			if last = t.probeReady(s.Client, s.BaseURL, args); last == nil {
				return s, nil, nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	s.Stop()
	out, _ := os.ReadFile(log.Name())
	return nil, nil, fmt.Errorf("the API server did not answer within %s: %v\n%s", ReadyTimeout, last, Tail(string(out)))
}

// Log is what the server has written to its output so far.
func (s *Server) Log() (string, error) {
	out, err := os.ReadFile(s.log.Name())
	return string(out), err
}

// Stop ends the server: SIGTERM so it can close its store, a kill if it does not stop in time.
func (s *Server) Stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.log.Close()
}

// probeReady says whether the server at base, started with args, serves the Event API and every
// ready path.
func (t *Target) probeReady(client *http.Client, base string, args []string) error {
	a := t.Profile.APIServer
	if err := probe(client, base+t.GroupPath(), a.Token); err != nil {
		return err
	}
	paths := a.ReadyPaths
	for _, flag := range slices.Sorted(maps.Keys(a.ReadyPathsWith)) {
		if slices.ContainsFunc(args, func(arg string) bool { return strings.Contains(arg, flag) }) {
			paths = append(slices.Clone(paths), a.ReadyPathsWith[flag]...)
		}
	}
	for _, path := range paths {
		if err := probe(client, base+path, a.Token); err != nil && !errors.Is(err, errAnswered) {
			return err
		}
	}
	return nil
}

// errAnswered is probe's error for an answer other than 200 and 404: the path exists, though the
// scenario's authorizer does not let the suite read it.
var errAnswered = errors.New("answered")

func probe(client *http.Client, url, token string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	default:
		return fmt.Errorf("GET %s: %s (%w)", url, resp.Status, errAnswered)
	}
	return nil
}

// Tail is the end of a program's output, as an error quotes it: the last 4,000 bytes.
func Tail(s string) string {
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return s
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
		Timeout:   CommandTimeout,
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
	// Given is what the command was given to judge (the configuration file a checker read), for
	// failure messages.
	Given string
}

// Output is stdout and stderr together.
func (r Result) Output() string { return r.Stdout + r.Stderr }

// Report is the output for a failure message: said to be empty when it is (a checker that exits 0
// silently), followed by what the command was given, so an implementer can run it again by hand.
func (r Result) Report() string {
	out := r.Output()
	if out == "" {
		out = "(no output)\n"
	}
	if r.Given != "" {
		out += "on the file:\n" + r.Given
	}
	return out
}

// Run runs a command of the target in dir with a time limit.
func (t *Target) Run(dir string, command []string, args ...string) (Result, error) {
	argv := append(t.ExpandAll(command), args...)
	ctx, cancel := context.WithTimeout(context.Background(), CommandTimeout)
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
			t.help = parseHelp(r.Output())
		}
	})
	return t.help, t.helpErr
}
