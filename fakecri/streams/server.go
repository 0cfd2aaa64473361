package streams

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/benbjohnson/clock"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"

	"orch.io/orch/fakecri/script"
	"orch.io/orch/fakecri/shell"
)

// Runtime is what the streams need of the runtime behind them.
type Runtime interface {
	// Target is running container id as a stream sees it, with the exec rule that answers cmd
	// (none for an attach, cmd nil).
	Target(id string, cmd []string) (*Target, error)
	// Attach has a fed the lines container id logs from now on, and answers the time between
	// them (0: it logs none); Detach stops it.
	Attach(id string, a *Attachment) time.Duration
	Detach(id string, a *Attachment)
	// CatchUp brings the runtime to its clock's now: the exits and log lines due.
	CatchUp()
	Clock() clock.Clock
	// PortRule is the script's answer to port of sandbox id; nil where nothing listens.
	PortRule(sandboxID string, port int32) (*script.CompiledPortRule, error)
}

// Target is what a stream needs of its container, read under the runtime's lock.
type Target struct {
	ID        string
	Container *runtimeapi.ContainerConfig
	ImageUID  int64
	Env       []string
	Hostname  string
	Files     map[string]string
	// Rule is the script's exec rule answering the command, if one does.
	Rule *script.CompiledExecRule
	// Exited is closed when the container exits.
	Exited <-chan struct{}
	// Sleep waits on the runtime's clock, failing when ctx ends or the container exits first.
	Sleep func(context.Context, time.Duration) error
}

// Shell is the built-in shell over the target's container, its environment and files.
func (t *Target) Shell(sleep func(context.Context, time.Duration) error, in io.Reader, stdout, stderr io.Writer, prompt string) *shell.Shell {
	return &shell.Shell{Env: t.Env, Hostname: t.Hostname, Files: t.Files, Container: t.Container, ImageUID: t.ImageUID,
		Sleep: sleep, Stdin: in, Stdout: stdout, Stderr: stderr, Prompt: prompt}
}

// Server is fakecri's CRI streaming server, Kubernetes' library as containerd and CRI-O serve
// it: Exec, Attach and PortForward answer a one-time URL on it (GetExec, GetAttach,
// GetPortForward), which the node agent proxies the client's stream to.
type Server struct {
	streaming.Server
	http *http.Server
	ln   net.Listener
}

// Serve serves rt's streams on ln until the Server is closed. A stream idle (no data either way)
// for idleTimeout is closed, as containerd's stream_idle_timeout does; 0 keeps it.
func Serve(ln net.Listener, idleTimeout time.Duration, rt Runtime) (*Server, error) {
	config := streaming.DefaultConfig
	config.Addr = ln.Addr().String()
	config.BaseURL = &url.URL{Scheme: "http", Host: ln.Addr().String()}
	config.StreamIdleTimeout = idleTimeout
	lib, err := streaming.NewServer(config, handler{rt})
	if err != nil {
		return nil, err
	}
	s := &Server{Server: lib, http: &http.Server{Handler: lib, ReadHeaderTimeout: 10 * time.Second}, ln: ln}
	go s.http.Serve(ln)
	return s, nil
}

// Addr is where the streams are served.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops serving: no new stream starts; those open run until their client or container ends.
func (s *Server) Close() error {
	return s.http.Close()
}

// handler serves the streams the library accepted.
type handler struct{ rt Runtime }

// EOF is a reader at its end: the standard input of a command given none.
type EOF struct{}

func (EOF) Read([]byte) (int, error) { return 0, io.EOF }

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
func (h handler) Exec(ctx context.Context, id string, cmd []string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	drain(resize)
	t, err := h.rt.Target(id, cmd)
	if err != nil {
		return err
	}
	stdout, stderr := orDiscard(out), orDiscard(errw)
	var stdin io.Reader = EOF{}
	if in != nil {
		stdin = in
	}
	prompt := ""
	if tty {
		term := newTerminal(in, out)
		stdin, stdout, stderr, prompt = term, term.out, term.out, "/ # "
	}
	code := 0
	if rule := t.Rule; rule != nil {
		if err := writeChunked(stdout, rule.Stdout); err != nil {
			return err
		}
		if err := writeChunked(stderr, rule.Stderr); err != nil {
			return err
		}
		if err := t.Sleep(ctx, rule.Delay.D()); err != nil {
			return err
		}
		code = int(rule.ExitCode)
	} else {
		if code, err = t.Shell(t.Sleep, stdin, stdout, stderr, prompt).Exec(ctx, cmd); err != nil {
			return err
		}
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("command %q exited with %d", strings.Join(cmd, " "), code), Code: code}
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
func (h handler) Attach(ctx context.Context, id string, in io.Reader, out, errw io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	drain(resize)
	t, err := h.rt.Target(id, nil)
	if err != nil {
		return err
	}
	stdout, stderr := orDiscard(out), orDiscard(errw)
	if in != nil && interactiveShell(t.Container) {
		return h.attachShell(ctx, t, in, stdout, stderr, tty)
	}
	if tty {
		term := newTerminal(in, out)
		stdout, stderr = term.out, term.out
		go io.Copy(io.Discard, term)
	} else if in != nil {
		go io.Copy(io.Discard, in)
	}
	a := &Attachment{ready: make(chan struct{}, 1)}
	every := h.rt.Attach(t.ID, a)
	defer h.rt.Detach(t.ID, a)
	for {
		if err := a.flush(stdout, stderr); err != nil {
			return nil // the client went
		}
		var tick <-chan time.Time
		var timer *clock.Timer
		if every > 0 {
			timer = h.rt.Clock().Timer(every)
			tick = timer.C
		}
		exited := false
		select {
		case <-a.ready:
		case <-tick:
			h.rt.CatchUp() // writes the lines that fell due
		case <-t.Exited:
			h.rt.CatchUp()
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
func (h handler) attachShell(ctx context.Context, t *Target, in io.Reader, stdout, stderr io.Writer, tty bool) error {
	prompt := ""
	if tty {
		term := newTerminal(in, stdout)
		in, stdout, stderr, prompt = term, term.out, term.out, "/ # "
	}
	sh := t.Shell(t.Sleep, in, stdout, stderr, prompt)
	done := make(chan struct{})
	go func() {
		defer close(done)
		sh.Sh(ctx, nil)
	}()
	select {
	case <-done:
	case <-t.Exited:
	case <-ctx.Done():
	}
	return nil
}

// PortForward connects the stream to the script's responder for the sandbox's port; without one
// the connection is refused, as a port nothing listens on refuses it.
func (h handler) PortForward(ctx context.Context, sandboxID string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	rule, err := h.rt.PortRule(sandboxID, port)
	if err != nil {
		return err
	}
	if rule == nil {
		return fmt.Errorf("failed to connect to localhost:%d inside namespace %q, IPv4: dial tcp4 127.0.0.1:%d: connect: connection refused IPv6 dial tcp6 [::1]:%d: connect: connection refused ", port, sandboxID, port, port)
	}
	if rule.Echo {
		_, err := io.Copy(stream, stream)
		return ignoreClosed(err)
	}
	return ignoreClosed(answerHTTP(stream, rule.HTTP))
}
