package fakecri

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sort"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/fakecri/script"
	"orch.io/orch/fakecri/shell"
	"orch.io/orch/fakecri/streams"
)

// Version reports the runtime's name and version and the CRI version (v1).
func (r *Runtime) Version(ctx context.Context, req *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return call(ctx, r, mVersion, req, func(ctx context.Context, req *runtimeapi.VersionRequest, cc *callCtx) (*runtimeapi.VersionResponse, error) {
		c := r.cur.Load()
		return &runtimeapi.VersionResponse{
			Version:           "0.1.0",
			RuntimeName:       c.RuntimeName,
			RuntimeVersion:    c.RuntimeVersion,
			RuntimeApiVersion: "v1",
		}, nil
	})
}

// Status reports the RuntimeReady and NetworkReady conditions, the runtime
// handlers and features; verbose adds the configuration as info.
func (r *Runtime) Status(ctx context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	return call(ctx, r, mStatus, req, func(ctx context.Context, req *runtimeapi.StatusRequest, cc *callCtx) (*runtimeapi.StatusResponse, error) {
		c := r.cur.Load()
		resp := newStatusAnswer(c)
		if req.Verbose {
			r.mu.Lock()
			cidr := r.podCIDR
			r.mu.Unlock()
			if !cidr.IsValid() {
				cidr = c.PodCIDR
			}
			cfg, _ := json.Marshal(map[string]any{
				"runtimeName":     c.RuntimeName,
				"runtimeVersion":  c.RuntimeVersion,
				"sandboxImage":    c.SandboxImage,
				"podCIDR":         cidr.String(),
				"cgroupDriver":    map[bool]string{true: "cgroupfs", false: "systemd"}[c.Cgroupfs],
				"snapshotter":     "overlayfs",
				"runtimeHandlers": c.Handlers,
				"clock":           r.now().UTC().Format(time.RFC3339Nano),
			})
			resp.Info = map[string]string{
				"config":            string(cfg),
				"golang":            runtime.Version(),
				"lastCNILoadStatus": "OK",
			}
			if !c.NetworkReady.Status {
				resp.Info["lastCNILoadStatus"] = cmp.Or(c.NetworkReady.Message, "cni config load failed")
			}
		}
		return resp, nil
	})
}

// statusAnswer is a Status answer's messages made together, the handlers' in two arrays: each
// node's status post asked for twelve allocations, three now. The answer is the caller's alone.
type statusAnswer struct {
	resp     runtimeapi.StatusResponse
	status   runtimeapi.RuntimeStatus
	conds    [2]runtimeapi.RuntimeCondition
	condPtrs [2]*runtimeapi.RuntimeCondition
	features runtimeapi.RuntimeFeatures
}

// handlerAnswer is one runtime handler of a Status answer with its features.
type handlerAnswer struct {
	handler  runtimeapi.RuntimeHandler
	features runtimeapi.RuntimeHandlerFeatures
}

// newStatusAnswer is the Status answer of c without its verbose info: the RuntimeReady and
// NetworkReady conditions, the features and the runtime handlers.
func newStatusAnswer(c *script.Compiled) *runtimeapi.StatusResponse {
	a := &statusAnswer{}
	for i, cond := range []struct {
		typ string
		s   script.Condition
	}{{runtimeapi.RuntimeReady, c.RuntimeReady}, {runtimeapi.NetworkReady, c.NetworkReady}} {
		rc := &a.conds[i]
		rc.Type, rc.Status, rc.Reason, rc.Message = cond.typ, cond.s.Status, cond.s.Reason, cond.s.Message
		a.condPtrs[i] = rc
	}
	a.status.Conditions = a.condPtrs[:]
	a.features.SupplementalGroupsPolicy, a.features.MountOptions = true, true
	a.resp.Status, a.resp.Features = &a.status, &a.features
	if len(c.Handlers) > 0 {
		hs := make([]handlerAnswer, len(c.Handlers))
		a.resp.RuntimeHandlers = make([]*runtimeapi.RuntimeHandler, len(c.Handlers))
		for i, name := range c.Handlers {
			h := &hs[i]
			h.features.RecursiveReadOnlyMounts, h.features.UserNamespaces = true, true
			h.handler.Name, h.handler.Features = name, &h.features
			a.resp.RuntimeHandlers[i] = &h.handler
		}
	}
	return &a.resp
}

// RuntimeConfig reports the cgroup driver.
func (r *Runtime) RuntimeConfig(ctx context.Context, req *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	return call(ctx, r, mRuntimeConfig, req, func(ctx context.Context, req *runtimeapi.RuntimeConfigRequest, cc *callCtx) (*runtimeapi.RuntimeConfigResponse, error) {
		d := runtimeapi.CgroupDriver_SYSTEMD
		if r.cur.Load().Cgroupfs {
			d = runtimeapi.CgroupDriver_CGROUPFS
		}
		cc.resp = d.String()
		return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: d}}, nil
	})
}

// UpdateRuntimeConfig takes the pod CIDR new sandbox IPs come from.
func (r *Runtime) UpdateRuntimeConfig(ctx context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	return call(ctx, r, mUpdateRuntimeConfig, req, func(ctx context.Context, req *runtimeapi.UpdateRuntimeConfigRequest, cc *callCtx) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
		cidr := req.GetRuntimeConfig().GetNetworkConfig().GetPodCidr()
		if cidr == "" {
			return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
		}
		// the kubelet may send "v4cidr,v6cidr"; fakecri uses the IPv4 one
		var p netip.Prefix
		for _, s := range strings.Split(cidr, ",") {
			q, err := netip.ParsePrefix(strings.TrimSpace(s))
			if err != nil {
				return nil, status.Errorf(codes.InvalidArgument, "invalid pod CIDR %q: %v", cidr, err)
			}
			if q.Addr().Is4() && q.Bits() <= 30 && !p.IsValid() {
				p = q.Masked()
			}
		}
		if !p.IsValid() {
			return nil, status.Errorf(codes.InvalidArgument, "pod CIDR %q has no IPv4 range of /30 or wider", cidr)
		}
		r.mu.Lock()
		r.podCIDR = p
		r.mu.Unlock()
		cc.resp = p.String()
		return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
	})
}

// ExecSync answers from the script's exec rules, else runs the built-in command set a streamed exec
// runs (echo, cat, ls, sleep, sh -c, pgrep, ...), its output collected; any other command succeeds
// with no output. Time passes on the runtime's clock: a command still waiting at the request's
// timeout fails with DeadlineExceeded and is gone.
func (r *Runtime) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	return call(ctx, r, mExecSync, req, func(ctx context.Context, req *runtimeapi.ExecSyncRequest, cc *callCtx) (*runtimeapi.ExecSyncResponse, error) {
		if len(req.Cmd) == 0 {
			return nil, status.Error(codes.InvalidArgument, "cmd is required")
		}
		if _, err := onContainer(r, cc, req.ContainerId, notFound, func(sc *script.Compiled, ct *container, now time.Time) (*runtimeapi.ExecSyncResponse, error) {
			if ct.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
				return nil, status.Errorf(codes.FailedPrecondition, "container %q is in %s state", ct.id, ct.state)
			}
			return nil, nil
		}); err != nil {
			return nil, err
		}
		// The command's rule and the shell's view of the container, chosen under the lock.
		t, err := streamRuntime{r}.Target(req.ContainerId, req.Cmd)
		if err != nil {
			return nil, status.Error(codes.FailedPrecondition, err.Error())
		}
		limit := time.Duration(req.Timeout) * time.Second
		var deadline time.Time
		if limit > 0 {
			deadline = r.now().Add(limit)
		}
		// Every wait of the command passes through sleep: one that would outlast the deadline waits
		// until it and ends the command.
		var died, timedOut bool
		sleep := func(ctx context.Context, d time.Duration) error {
			if !deadline.IsZero() {
				if left := deadline.Sub(r.now()); d > left {
					d, timedOut = left, true
				}
			}
			gone, err := r.sleepOr(ctx, d, t.Exited)
			switch {
			case err != nil:
				return err
			case gone:
				died = true
				return fmt.Errorf("container %q exited", t.ID)
			case timedOut:
				return errors.New("timed out")
			}
			return nil
		}
		var stdout, stderr bytes.Buffer
		resp := &runtimeapi.ExecSyncResponse{}
		if rule := t.Rule; rule != nil {
			stdout.WriteString(rule.Stdout)
			stderr.WriteString(rule.Stderr)
			if err := sleep(ctx, rule.Delay.D()); err == nil {
				resp.ExitCode = rule.ExitCode
			}
		} else if shell.Knows(req.Cmd[0]) {
			sh := t.Shell(sleep, streams.EOF{}, &stdout, &stderr, "")
			sh.Healthy = true
			code, _ := sh.Exec(ctx, req.Cmd)
			resp.ExitCode = int32(code)
		}
		// Any other unscripted command stands for a healthy program: it succeeds with no output, so
		// that an exec probe the script does not mention passes, as the scenarios rely on.
		switch {
		case ctx.Err() != nil:
			return nil, ctxErr(ctx.Err())
		case died:
			cc.resp = "container exited"
			return nil, status.Errorf(codes.Unknown, "failed to exec in container: container %q exited while the command ran", t.ID)
		case timedOut:
			cc.resp = "timeout"
			return nil, status.Errorf(codes.DeadlineExceeded, "timeout %v exceeded: context deadline exceeded", limit)
		}
		resp.Stdout, resp.Stderr = stdout.Bytes(), stderr.Bytes()
		cc.resp = fmt.Sprintf("exit_code=%d", resp.ExitCode)
		return resp, nil
	})
}

// execRuleLocked is the first exec rule of the script that answers cmd in running c now.
func (r *Runtime) execRuleLocked(sc *script.Compiled, c *container, cmd string, now time.Time) *script.CompiledExecRule {
	el := now.Sub(c.startedAt)
	for _, e := range sc.Exec {
		if el < e.From.D() || e.Until > 0 && el >= e.Until.D() {
			continue
		}
		if e.Cmd.Match(cmd) && matches(&e.Matcher, r, c) {
			return e
		}
	}
	return nil
}

// ReopenContainerLog, for a running container, opens its log path again, as containerd does after
// the agent renamed the file to rotate it: lines written from now on go to a new file there.
func (r *Runtime) ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	return call(ctx, r, mReopenContainerLog, req, func(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest, cc *callCtx) (*runtimeapi.ReopenContainerLogResponse, error) {
		return onContainer(r, cc, req.ContainerId, notFound, func(_ *script.Compiled, c *container, now time.Time) (*runtimeapi.ReopenContainerLogResponse, error) {
			if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
				return nil, status.Errorf(codes.FailedPrecondition, "container %q is not running", c.id)
			}
			if err := c.reopenLogLocked(now); err != nil {
				return nil, status.Errorf(codes.Unknown, "failed to create and open log file: %v", err)
			}
			return &runtimeapi.ReopenContainerLogResponse{}, nil
		})
	})
}

// ---- checkpoints ----

type checkpoint struct {
	path       string
	at         time.Time
	sandboxCfg *runtimeapi.PodSandboxConfig
	handler    string
	containers []*runtimeapi.ContainerConfig
}

// Checkpoints lists the checkpoint locations written so far, oldest first.
func (r *Runtime) Checkpoints() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*checkpoint
	for _, cp := range r.checkpoints {
		out = append(out, cp)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].at.Equal(out[j].at) {
			return out[i].at.Before(out[j].at)
		}
		return out[i].path < out[j].path
	})
	paths := make([]string, len(out))
	for i, cp := range out {
		paths[i] = cp.path
	}
	return paths
}

// CheckpointContainer records a checkpoint of a running container at the
// location (no file is written).
func (r *Runtime) CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) (*runtimeapi.CheckpointContainerResponse, error) {
	return call(ctx, r, mCheckpointContainer, req, func(ctx context.Context, req *runtimeapi.CheckpointContainerRequest, cc *callCtx) (*runtimeapi.CheckpointContainerResponse, error) {
		return onContainer(r, cc, req.ContainerId, notFound, func(_ *script.Compiled, c *container, now time.Time) (*runtimeapi.CheckpointContainerResponse, error) {
			if req.Location == "" {
				return nil, status.Error(codes.InvalidArgument, "checkpoint location is required")
			}
			if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
				return nil, status.Errorf(codes.FailedPrecondition, "container %q is not running", c.id)
			}
			r.checkpoints[req.Location] = &checkpoint{
				path: req.Location, at: now, sandboxCfg: c.sb.cfg, handler: c.sb.handler,
				containers: []*runtimeapi.ContainerConfig{c.cfg},
			}
			cc.resp = req.Location
			return &runtimeapi.CheckpointContainerResponse{}, nil
		})
	})
}

// CheckpointPod records a checkpoint of a ready sandbox and its running
// containers (or those named) at output_path (no file is written).
func (r *Runtime) CheckpointPod(ctx context.Context, req *runtimeapi.CheckpointPodRequest) (*runtimeapi.CheckpointPodResponse, error) {
	return call(ctx, r, mCheckpointPod, req, func(ctx context.Context, req *runtimeapi.CheckpointPodRequest, cc *callCtx) (*runtimeapi.CheckpointPodResponse, error) {
		return onSandbox(r, cc, req.PodSandboxId, notFound, func(_ *script.Compiled, sb *sandbox, now time.Time) (*runtimeapi.CheckpointPodResponse, error) {
			return r.checkpointPodLocked(sb, req, cc, now)
		})
	})
}

// checkpointPodLocked records a checkpoint of ready sb.
func (r *Runtime) checkpointPodLocked(sb *sandbox, req *runtimeapi.CheckpointPodRequest, cc *callCtx, now time.Time) (*runtimeapi.CheckpointPodResponse, error) {
	if req.OutputPath == "" {
		return nil, status.Error(codes.InvalidArgument, "output_path is required")
	}
	if sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Errorf(codes.FailedPrecondition, "pod sandbox %q is not ready", sb.id)
	}
	cp := &checkpoint{path: req.OutputPath, at: now, sandboxCfg: sb.cfg, handler: sb.handler}
	want := map[string]bool{}
	for _, id := range req.ContainerIds {
		c, err := r.lookupContainerLocked(id)
		if err != nil {
			return nil, err
		}
		if c.sb != sb {
			return nil, status.Errorf(codes.InvalidArgument, "container %q is not in pod sandbox %q", c.id, sb.id)
		}
		want[c.id] = true
	}
	for _, c := range sb.containers {
		if len(want) > 0 && !want[c.id] {
			continue
		}
		if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
			if len(want) > 0 {
				return nil, status.Errorf(codes.FailedPrecondition, "container %q is not running", c.id)
			}
			continue
		}
		cp.containers = append(cp.containers, c.cfg)
	}
	r.checkpoints[req.OutputPath] = cp
	cc.resp = fmt.Sprintf("containers=%d", len(cp.containers))
	return &runtimeapi.CheckpointPodResponse{}, nil
}

// RestorePod recreates a checkpointed pod: a ready sandbox with its
// containers Created, for the caller to start.
func (r *Runtime) RestorePod(ctx context.Context, req *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	return call(ctx, r, mRestorePod, req, func(ctx context.Context, req *runtimeapi.RestorePodRequest, cc *callCtx) (*runtimeapi.RestorePodResponse, error) {
		return locked(r, func(sc *script.Compiled, now time.Time) (*runtimeapi.RestorePodResponse, error) {
			return r.restorePodLocked(sc, req, cc, now)
		})
	})
}

// restorePodLocked recreates the pod of a checkpoint, with what the request changes of it.
func (r *Runtime) restorePodLocked(sc *script.Compiled, req *runtimeapi.RestorePodRequest, cc *callCtx, now time.Time) (*runtimeapi.RestorePodResponse, error) {
	cp := r.checkpoints[req.CheckpointPath]
	if cp == nil {
		return nil, status.Errorf(codes.NotFound, "checkpoint %q not found", req.CheckpointPath)
	}
	cfg, handler := cp.sandboxCfg, cp.handler
	if req.Config != nil {
		cfg = req.Config
	}
	if req.RuntimeHandler != "" {
		handler = req.RuntimeHandler
	}
	ctrs := cp.containers
	if len(req.ContainerConfigs) > 0 {
		ctrs = req.ContainerConfigs
	}
	sb, err := r.runSandboxLocked(sc, cfg, handler)
	if err != nil {
		return nil, err
	}
	resp := &runtimeapi.RestorePodResponse{PodSandboxId: sb.id}
	for _, ccfg := range ctrs {
		ct, err := r.createContainerLocked(sc, sb, proto.Clone(ccfg).(*runtimeapi.ContainerConfig), sb.cfg, now)
		if err != nil {
			// undo: a failed restore leaves nothing behind
			r.stopSandboxLocked(sb, now)
			r.removeSandboxLocked(sb, now)
			return nil, err
		}
		resp.RestoredContainers = append(resp.RestoredContainers, &runtimeapi.RestoredContainer{Name: ccfg.GetMetadata().GetName(), ContainerId: ct.id})
	}
	cc.resp = sb.id
	return resp, nil
}
