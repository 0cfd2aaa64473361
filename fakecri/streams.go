package fakecri

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"orch.io/orch/fakecri/script"
	"orch.io/orch/fakecri/shell"
)

// StreamServer is fakecri's CRI streaming server, Kubernetes' library as containerd and CRI-O
// serve it: Exec, Attach and PortForward answer a one-time URL on it, which the node agent proxies
// the client's stream to.
type StreamServer struct {
	lib  streaming.Server
	http *http.Server
	ln   net.Listener
}

// ServeStreams serves the streaming endpoints on ln until the StreamServer is closed; from then
// on Exec, Attach and PortForward answer URLs under ln's address. A stream idle (no data either
// way) for idleTimeout is closed, as containerd's stream_idle_timeout does; 0 keeps it.
func (r *Runtime) ServeStreams(ln net.Listener, idleTimeout time.Duration) (*StreamServer, error) {
	config := streaming.DefaultConfig
	config.Addr = ln.Addr().String()
	config.BaseURL = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	config.StreamIdleTimeout = idleTimeout
	lib, err := streaming.NewServer(config, streamRuntime{r})
	if err != nil {
		return nil, err
	}
	s := &StreamServer{lib: lib, http: &http.Server{Handler: lib, ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	r.streams.Store(s)
	go s.http.Serve(ln)
	return s, nil
}

// Addr is where the streams are served.
func (s *StreamServer) Addr() net.Addr { return s.ln.Addr() }

// Close stops serving: no new stream starts; those open run until their client or container ends.
func (s *StreamServer) Close() error {
	return s.http.Close()
}

func (r *Runtime) streamServer(name string) (*StreamServer, error) {
	s := r.streams.Load()
	if s == nil {
		return nil, status.Errorf(codes.Unimplemented,
			"fakecri serves no streaming endpoint: %s needs one (fakecri --streaming-address)", name)
	}
	return s, nil
}

// Exec answers the URL of a streamed exec in a running container.
func (r *Runtime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	return call(ctx, r, mExec, req, func(ctx context.Context, req *runtimeapi.ExecRequest, cc *callCtx) (*runtimeapi.ExecResponse, error) {
		s, err := r.streamServer("Exec")
		if err != nil {
			return nil, err
		}
		if len(req.Cmd) == 0 {
			return nil, status.Error(codes.InvalidArgument, "cmd is required")
		}
		if err := r.runningContainer(cc, req.ContainerId); err != nil {
			return nil, err
		}
		return s.lib.GetExec(req)
	})
}

// Attach answers the URL of a stream attached to a running container.
func (r *Runtime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	return call(ctx, r, mAttach, req, func(ctx context.Context, req *runtimeapi.AttachRequest, cc *callCtx) (*runtimeapi.AttachResponse, error) {
		s, err := r.streamServer("Attach")
		if err != nil {
			return nil, err
		}
		if err := r.runningContainer(cc, req.ContainerId); err != nil {
			return nil, err
		}
		return s.lib.GetAttach(req)
	})
}

// PortForward answers the URL of a port-forwarding stream into a ready sandbox.
func (r *Runtime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	return call(ctx, r, mPortForward, req, func(ctx context.Context, req *runtimeapi.PortForwardRequest, cc *callCtx) (*runtimeapi.PortForwardResponse, error) {
		s, err := r.streamServer("PortForward")
		if err != nil {
			return nil, err
		}
		if _, err := onSandbox(r, cc, req.PodSandboxId, notFound, func(_ *script.Compiled, sb *sandbox, _ time.Time) (*struct{}, error) {
			if sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
				return nil, status.Errorf(codes.FailedPrecondition, "sandbox %q is not running", sb.id)
			}
			return nil, nil
		}); err != nil {
			return nil, err
		}
		return s.lib.GetPortForward(req)
	})
}

func (r *Runtime) runningContainer(cc *callCtx, id string) error {
	_, err := onContainer(r, cc, id, notFound, func(_ *script.Compiled, c *container, _ time.Time) (*struct{}, error) {
		if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
			return nil, status.Errorf(codes.FailedPrecondition, "container %q is in %s state", c.id, c.state)
		}
		return nil, nil
	})
	return err
}

// streamRuntime serves the streams the library accepted.
type streamRuntime struct{ r *Runtime }

// target is what a stream needs of its container, read under the lock.
type target struct {
	c        *container
	rule     *script.CompiledExecRule
	env      []string
	hostname string
	files    map[string]string
}

func (s streamRuntime) target(id string, cmd []string) (*target, error) {
	return locked(s.r, func(sc *script.Compiled, now time.Time) (*target, error) {
		c, err := s.r.lookupContainerLocked(id)
		if err != nil {
			return nil, err
		}
		if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
			return nil, fmt.Errorf("container %q is in %s state", c.id, c.state)
		}
		t := &target{c: c, hostname: c.sb.cfg.GetHostname(), files: map[string]string{}}
		if t.hostname == "" {
			t.hostname = c.sb.cfg.GetMetadata().GetName()
		}
		t.env = append(t.env, "HOSTNAME="+t.hostname)
		for _, kv := range c.cfg.Envs {
			t.env = append(t.env, kv.Key+"="+string(kv.Value))
		}
		t.files["/etc/hostname"] = t.hostname + "\n"
		maps.Copy(t.files, shell.SandboxFiles(c.sb.cfg))
		for _, f := range sc.Files {
			if matches(&f.Matcher, s.r, c) {
				t.files[f.Path] = f.Content
			}
		}
		if cmd != nil {
			t.rule = s.r.execRuleLocked(sc, c, joinCmd(cmd), now)
		}
		return t, nil
	})
}

// shell is the built-in shell over the target's container, its environment and files.
func (t *target) shell(sleep func(context.Context, time.Duration) error, in io.Reader, stdout, stderr io.Writer, prompt string) *shell.Shell {
	return &shell.Shell{Env: t.env, Hostname: t.hostname, Files: t.files, Container: t.c.cfg, ImageUID: t.c.imageUID,
		Sleep: sleep, Stdin: in, Stdout: stdout, Stderr: stderr, Prompt: prompt}
}

func joinCmd(cmd []string) string {
	var b bytes.Buffer
	for i, a := range cmd {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(a)
	}
	return b.String()
}

// sleep waits d on the runtime's clock, failing when ctx ends or c exits first.
func (s streamRuntime) sleep(c *container) func(context.Context, time.Duration) error {
	return func(ctx context.Context, d time.Duration) error {
		died, err := s.r.sleepOr(ctx, d, c.exited)
		if err != nil {
			return err
		}
		if died {
			return fmt.Errorf("container %q exited", c.id)
		}
		return nil
	}
}

func drain(resize <-chan remotecommand.TerminalSize) {
	if resize != nil {
		go func() {
			for range resize {
			}
		}()
	}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// Exec answers from the script's exec rules, else runs the built-in command set. A non-zero
// status is an exit error, which the library reports as the exit code.
func (s streamRuntime) Exec(ctx context.Context, id string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	drain(resize)
	t, err := s.target(id, cmd)
	if err != nil {
		return err
	}
	stdout, stderr := orDiscard(out), orDiscard(errw)
	var stdin io.Reader = eofReader{}
	if in != nil {
		stdin = in
	}
	prompt := ""
	if tty {
		term := newTerminal(in, out)
		stdin, stdout, stderr, prompt = term, term.out, term.out, "/ # "
	}
	code := 0
	if rule := t.rule; rule != nil {
		if err := writeChunked(stdout, rule.Stdout); err != nil {
			return err
		}
		if err := writeChunked(stderr, rule.Stderr); err != nil {
			return err
		}
		if err := s.sleep(t.c)(ctx, rule.Delay.D()); err != nil {
			return err
		}
		code = int(rule.ExitCode)
	} else {
		if code, err = t.shell(s.sleep(t.c), stdin, stdout, stderr, prompt).Exec(ctx, cmd); err != nil {
			return err
		}
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command %q exited with %d", joinCmd(cmd), code), Code: code}
	}
	return nil
}

// outputChunk is the most a stream is written at once, as containerd copies a process's output:
// one SPDY data frame holds less than 16 MiB, so a larger write fails.
const outputChunk = 32 << 10

// writeChunked writes s to w in pieces of outputChunk, answering the first failure: output that
// does not arrive is an error, never a silent success.
func writeChunked(w io.Writer, s string) error {
	for len(s) > 0 {
		n := min(len(s), outputChunk)
		if _, err := io.WriteString(w, s[:n]); err != nil {
			return err
		}
		s = s[n:]
	}
	return nil
}

// Attach streams the lines the container's script makes it log from now on, and on a terminal
// echoes what is typed, until the container exits or the client goes.
func (s streamRuntime) Attach(ctx context.Context, id string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	drain(resize)
	t, err := s.target(id, nil)
	if err != nil {
		return err
	}
	stdout, stderr := orDiscard(out), orDiscard(errw)
	if in != nil && interactiveShell(t.c.cfg) {
		return s.attachShell(ctx, t, in, stdout, stderr, tty)
	}
	if tty {
		term := newTerminal(in, out)
		stdout, stderr = term.out, term.out
		go io.Copy(io.Discard, term)
	} else if in != nil {
		go io.Copy(io.Discard, in)
	}
	a := &attachment{ready: make(chan struct{}, 1)}
	every := s.r.attach(t.c, a)
	defer s.r.detach(t.c, a)
	for {
		if err := a.flush(stdout, stderr); err != nil {
			return nil // the client went
		}
		var tick <-chan time.Time
		var timer *clock.Timer
		if every > 0 {
			timer = s.r.clk.Timer(every)
			tick = timer.C
		}
		exited := false
		select {
		case <-a.ready:
		case <-tick:
			s.r.catchUp() // writes the lines that fell due
		case <-t.c.exited:
			s.r.catchUp()
			exited = true
		case <-ctx.Done():
			exited = true
		}
		if timer != nil {
			timer.Stop()
		}
		if exited {
			a.flush(stdout, stderr)
			return nil
		}
	}
}

// interactiveShell tells a container whose process is a shell reading its standard input (sh
// without -c, stdin open), as `kubectl run -i --image=busybox -- sh` and critest's attach make.
func interactiveShell(cfg *runtimeapi.ContainerConfig) bool {
	argv := append(slices.Clone(cfg.GetCommand()), cfg.GetArgs()...)
	return cfg.GetStdin() && len(argv) > 0 && path.Base(argv[0]) == "sh" && !slices.Contains(argv[1:], "-c")
}

// attachShell gives the attached client the container's shell: the built-in shell reads the
// client's input, as the container's sh reads its standard input, until the input ends, the
// container exits or the client goes. On a terminal it prompts and echoes.
func (s streamRuntime) attachShell(ctx context.Context, t *target, in io.Reader, stdout, stderr io.Writer, tty bool) error {
	prompt := ""
	if tty {
		term := newTerminal(in, stdout)
		in, stdout, stderr, prompt = term, term.out, term.out, "/ # "
	}
	sh := t.shell(s.sleep(t.c), in, stdout, stderr, prompt)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sh.Sh(ctx, nil)
	}()
	select {
	case <-done:
	case <-t.c.exited:
	case <-ctx.Done():
	}
	return nil
}

// catchUp brings the runtime to the clock's now: exits due, log lines due.
func (r *Runtime) catchUp() {
	r.lockAtNow()
	r.mu.Unlock()
}

// attachment receives the log lines of a container while a client is attached.
type attachment struct {
	mu             sync.Mutex
	stdout, stderr bytes.Buffer
	ready          chan struct{}
}

func (a *attachment) push(stream, line string) {
	a.mu.Lock()
	if stream == "stderr" {
		a.stderr.WriteString(line)
	} else {
		a.stdout.WriteString(line)
	}
	a.mu.Unlock()
	select {
	case a.ready <- struct{}{}:
	default:
	}
}

func (a *attachment) flush(stdout, stderr io.Writer) error {
	a.mu.Lock()
	o, e := bytes.Clone(a.stdout.Bytes()), bytes.Clone(a.stderr.Bytes())
	a.stdout.Reset()
	a.stderr.Reset()
	a.mu.Unlock()
	if _, err := stdout.Write(o); len(o) > 0 && err != nil {
		return err
	}
	if _, err := stderr.Write(e); len(e) > 0 && err != nil {
		return err
	}
	return nil
}

// attach adds a to c's log writer and answers the time between its lines (0: it logs none).
func (r *Runtime) attach(c *container, a *attachment) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.log == nil {
		return 0
	}
	c.log.attached = append(c.log.attached, a)
	return c.log.spec.Every.D()
}

func (r *Runtime) detach(c *container, a *attachment) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.log != nil {
		c.log.attached = slices.DeleteFunc(c.log.attached, func(x *attachment) bool { return x == a })
	}
}

// feed hands a line just logged to the clients attached.
func (w *logWriter) feed(stream, line string) {
	for _, a := range w.attached {
		a.push(stream, line+"\n")
	}
}

// PortForward connects the stream to the script's responder for the sandbox's port; without one
// the connection is refused, as a port nothing listens on refuses it.
func (s streamRuntime) PortForward(ctx context.Context, sandboxID string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	rule, err := locked(s.r, func(sc *script.Compiled, _ time.Time) (*script.CompiledPortRule, error) {
		sb, err := s.r.lookupSandboxLocked(sandboxID)
		if err != nil {
			return nil, err
		}
		for _, p := range sc.Ports {
			if p.Port == port && matchesSandbox(&p.Matcher, sb) {
				return p, nil
			}
		}
		return nil, fmt.Errorf("failed to connect to localhost:%d inside namespace %q, IPv4: dial tcp4 127.0.0.1:%d: connect: connection refused IPv6 dial tcp6 [::1]:%d: connect: connection refused ", port, sandboxID, port, port)
	})
	if err != nil {
		return err
	}
	if rule.Echo {
		_, err := io.Copy(stream, stream)
		return ignoreClosed(err)
	}
	return ignoreClosed(answerHTTP(stream, rule.HTTP))
}

// matchesSandbox is matches for a pod: its name, namespace and labels.
func matchesSandbox(m *script.Matcher, sb *sandbox) bool {
	md := sb.cfg.GetMetadata()
	if !m.Pod.Match(md.GetName()) || !m.Namespace.Match(md.GetNamespace()) {
		return false
	}
	for k, g := range m.PodLabels {
		v, ok := sb.cfg.Labels[k]
		if !ok || !g.Match(v) {
			return false
		}
	}
	return true
}

// answerHTTP answers each request read from conn with a, until the client closes.
func answerHTTP(conn io.ReadWriter, a *script.HTTPAnswer) error {
	code := a.Status
	if code == 0 {
		code = http.StatusOK
	}
	r := bufio.NewReader(conn)
	for {
		req, err := http.ReadRequest(r)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
		var head bytes.Buffer
		fmt.Fprintf(&head, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
		keys := make([]string, 0, len(a.Headers))
		for k := range a.Headers {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&head, "%s: %s\r\n", k, a.Headers[k])
		}
		if _, ok := a.Headers["Content-Type"]; !ok {
			head.WriteString("Content-Type: text/plain; charset=utf-8\r\n")
		}
		head.WriteString("Content-Length: " + strconv.Itoa(len(a.Body)) + "\r\n\r\n")
		if req.Method != http.MethodHead {
			head.WriteString(a.Body)
		}
		if _, err := conn.Write(head.Bytes()); err != nil {
			return err
		}
		if req.Close {
			return nil
		}
	}
}

func ignoreClosed(err error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe) {
		return nil
	}
	return err
}
