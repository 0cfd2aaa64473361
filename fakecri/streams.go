package fakecri

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/fakecri/script"
	"orch.io/orch/fakecri/shell"
	"orch.io/orch/fakecri/streams"
)

// ServeStreams serves the streaming endpoints on ln until the server is closed; from then on
// Exec, Attach and PortForward answer URLs under ln's address. A stream idle (no data either way)
// for idleTimeout is closed, as containerd's stream_idle_timeout does; 0 keeps it.
func (r *Runtime) ServeStreams(ln net.Listener, idleTimeout time.Duration) (*streams.Server, error) {
	s, err := streams.Serve(ln, idleTimeout, streamRuntime{r})
	if err != nil {
		return nil, err
	}
	r.streams.Store(s)
	return s, nil
}

func (r *Runtime) streamServer(name string) (*streams.Server, error) {
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
		return s.GetExec(req)
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
		return s.GetAttach(req)
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
		return s.GetPortForward(req)
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

// streamRuntime is the runtime as its streams read it.
type streamRuntime struct{ r *Runtime }

// Target is running container id as a stream sees it, read under the lock.
func (s streamRuntime) Target(id string, cmd []string) (*streams.Target, error) {
	return locked(s.r, func(sc *script.Compiled, now time.Time) (*streams.Target, error) {
		c, err := s.r.lookupContainerLocked(id)
		if err != nil {
			return nil, err
		}
		if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
			return nil, fmt.Errorf("container %q is in %s state", c.id, c.state)
		}
		t := &streams.Target{ID: c.id, Container: c.cfg, ImageUID: c.imageUID, Exited: c.exited,
			Hostname: c.sb.cfg.GetHostname(), Files: map[string]string{}, Sleep: s.sleep(c)}
		if t.Hostname == "" {
			t.Hostname = c.sb.cfg.GetMetadata().GetName()
		}
		t.Env = append(t.Env, "HOSTNAME="+t.Hostname)
		for _, kv := range c.cfg.Envs {
			t.Env = append(t.Env, kv.Key+"="+string(kv.Value))
		}
		t.Files["/etc/hostname"] = t.Hostname + "\n"
		maps.Copy(t.Files, shell.SandboxFiles(c.sb.cfg))
		for _, f := range sc.Files {
			if matches(&f.Matcher, s.r, c) {
				t.Files[f.Path] = f.Content
			}
		}
		if cmd != nil {
			t.Rule = s.r.execRuleLocked(sc, c, joinCmd(cmd), now)
		}
		return t, nil
	})
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

// CatchUp brings the runtime to the clock's now: exits due, log lines due.
func (s streamRuntime) CatchUp() {
	r := s.r
	r.lockAtNow()
	r.mu.Unlock()
}

// Clock is the runtime's clock.
func (s streamRuntime) Clock() clock.Clock { return s.r.clk }

// Attach adds a to the log writer of container id and answers the time between its lines (0: it
// logs none).
func (s streamRuntime) Attach(id string, a *streams.Attachment) time.Duration {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.lookupContainerLocked(id)
	if err != nil || c.log == nil {
		return 0
	}
	c.log.attached = append(c.log.attached, a)
	return c.log.spec.Every.D()
}

// Detach takes a off the log writer of container id.
func (s streamRuntime) Detach(id string, a *streams.Attachment) {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, err := r.lookupContainerLocked(id); err == nil && c.log != nil {
		c.log.attached = slices.DeleteFunc(c.log.attached, func(x *streams.Attachment) bool { return x == a })
	}
}

// feed hands a line just logged to the clients attached.
func (w *logWriter) feed(stream, line string) {
	for _, a := range w.attached {
		a.Push(stream, line+"\n")
	}
}

// PortRule is the script's responder for port of sandbox id; nil where there is none.
func (s streamRuntime) PortRule(sandboxID string, port int32) (*script.CompiledPortRule, error) {
	return locked(s.r, func(sc *script.Compiled, _ time.Time) (*script.CompiledPortRule, error) {
		sb, err := s.r.lookupSandboxLocked(sandboxID)
		if err != nil {
			return nil, err
		}
		for _, p := range sc.Ports {
			if p.Port == port && matchesSandbox(&p.Matcher, sb) {
				return p, nil
			}
		}
		return nil, nil
	})
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
