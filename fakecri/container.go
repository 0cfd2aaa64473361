package fakecri

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/script"
)

type exitPlan struct {
	stop    bool // a StopContainer in progress
	at      time.Time
	code    int32
	reason  string
	message string
}

type container struct {
	id          string
	seq         uint64
	sb          *sandbox
	cfg         *runtimeapi.ContainerConfig
	annotations map[string]string
	resources   *runtimeapi.LinuxContainerResources
	nameKey     string
	logPath     string

	imageID   string
	imageRef  string // repo digest
	imageName string // repo tag
	imageUID  int64

	state      runtimeapi.ContainerState
	createdAt  time.Time
	startedAt  time.Time
	finishedAt time.Time
	exitCode   int32
	reason     string
	message    string
	pid        uint32

	rule  *script.CompiledContainerRule
	usage *script.UsageCurves
	gen   uint64
	plan  *exitPlan

	log *logWriter // the open log file of a container whose rule scripts log lines

	exited  chan struct{} // closed when the container exits
	removed bool
	entry   *runtimeapi.Container // cached list entry; replaced, never modified
	wire    []byte                // entry encoded as a ListContainersResponse field; nil until needed
	// attrs is what every stats answer of the container names it by, made at its first and again
	// when its annotations change; replaced, never modified.
	attrs *runtimeapi.ContainerAttributes
}

// wireLocked returns the entry encoded as field 1 of a ListContainersResponse.
func (c *container) wireLocked() []byte {
	if c.wire == nil {
		b, _ := proto.Marshal(c.entry)
		w := protowire.AppendTag(make([]byte, 0, len(b)+4), 1, protowire.BytesType)
		c.wire = protowire.AppendBytes(w, b)
	}
	return c.wire
}

func (c *container) refreshEntry() {
	c.wire = nil
	c.entry = &runtimeapi.Container{
		Id:           c.id,
		PodSandboxId: c.sb.id,
		Metadata:     c.cfg.Metadata,
		Image:        c.cfg.Image,
		ImageRef:     c.imageID,
		State:        c.state,
		CreatedAt:    ts(c.createdAt),
		Labels:       c.cfg.Labels,
		Annotations:  c.annotations,
		ImageId:      c.imageID,
	}
}

func tsOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return ts(t)
}

func (r *Runtime) containerStatusLocked(c *container) *runtimeapi.ContainerStatus {
	img := &runtimeapi.ImageSpec{
		Image:              c.imageName,
		Annotations:        c.cfg.Image.GetAnnotations(),
		UserSpecifiedImage: c.cfg.Image.GetUserSpecifiedImage(),
		RuntimeHandler:     c.sb.handler,
	}
	sc := c.cfg.GetLinux().GetSecurityContext()
	uid := c.imageUID
	if sc.GetRunAsUser() != nil {
		uid = sc.GetRunAsUser().GetValue()
	}
	var gid int64
	if sc.GetRunAsGroup() != nil {
		gid = sc.GetRunAsGroup().GetValue()
	}
	sig := c.cfg.StopSignal
	if sig == runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT {
		sig = runtimeapi.Signal_SIGNAL_SIGTERM
	}
	return &runtimeapi.ContainerStatus{
		Id:          c.id,
		Metadata:    c.cfg.Metadata,
		State:       c.state,
		CreatedAt:   ts(c.createdAt),
		StartedAt:   tsOrZero(c.startedAt),
		FinishedAt:  tsOrZero(c.finishedAt),
		ExitCode:    c.exitCode,
		Image:       img,
		ImageRef:    c.imageRef,
		Reason:      c.reason,
		Message:     c.message,
		Labels:      c.cfg.Labels,
		Annotations: c.annotations,
		Mounts:      c.cfg.Mounts,
		LogPath:     c.logPath,
		Resources:   &runtimeapi.ContainerResources{Linux: c.resources},
		ImageId:     c.imageID,
		User: &runtimeapi.ContainerUser{Linux: &runtimeapi.LinuxContainerUser{
			Uid: uid, Gid: gid, SupplementalGroups: sc.GetSupplementalGroups(),
		}},
		StopSignal: sig,
	}
}

func (r *Runtime) containerInfoLocked(c *container) string {
	cfg, _ := protojson.Marshal(c.cfg)
	pid := c.pid
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		pid = 0
	}
	b, _ := json.Marshal(map[string]any{
		"sandboxID":      c.sb.id,
		"pid":            pid,
		"removing":       false,
		"snapshotKey":    c.id,
		"snapshotter":    "overlayfs",
		"runtimeType":    "io.containerd.runc.v2",
		"runtimeOptions": map[string]any{"systemd_cgroup": !r.cur.Load().Cgroupfs},
		"config":         json.RawMessage(orJSON(cfg)),
	})
	return string(b)
}

// lookupContainerLocked finds a container by id or unique id prefix.
func (r *Runtime) lookupContainerLocked(id string) (*container, error) {
	return lookupLocked(r.containers, r.ctrOrder, id, "container", "container", func(c *container) (string, bool) { return c.id, !c.removed })
}

// matches reports whether m selects container c.
func matches(m *script.Matcher, r *Runtime, c *container) bool {
	if m.Name.Any() && m.Image.Any() && m.Pod.Any() && m.Namespace.Any() && m.PodLabels == nil &&
		m.Labels == nil && m.MinAttempt == nil && m.MaxAttempt == nil {
		return true
	}
	md := c.cfg.Metadata
	if !m.Name.Match(md.GetName()) {
		return false
	}
	smd := c.sb.cfg.Metadata
	if !m.Pod.Match(smd.GetName()) || !m.Namespace.Match(smd.GetNamespace()) {
		return false
	}
	if m.MinAttempt != nil && md.GetAttempt() < *m.MinAttempt || m.MaxAttempt != nil && md.GetAttempt() > *m.MaxAttempt {
		return false
	}
	for k, g := range m.PodLabels {
		v, ok := c.sb.cfg.Labels[k]
		if !ok || !g.Match(v) {
			return false
		}
	}
	for k, g := range m.Labels {
		v, ok := c.cfg.Labels[k]
		if !ok || !g.Match(v) {
			return false
		}
	}
	if !m.Image.Any() {
		cands := []string{c.cfg.Image.GetImage(), c.cfg.Image.GetUserSpecifiedImage(), c.imageName, c.imageID}
		if im := r.images[c.imageID]; im != nil {
			cands = append(cands, im.repoTags...)
		}
		ok := false
		for _, s := range cands {
			if s != "" && m.Image.Match(s) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func reasonFor(code int32) string {
	if code == 0 {
		return "Completed"
	}
	return "Error"
}

// planLocked works out when a running container ends by itself and
// schedules it. Call it when the container starts or its limits change.
func (r *Runtime) planLocked(c *container, now time.Time) {
	c.gen++
	c.plan = nil
	var best *exitPlan
	consider := func(at time.Time, code int32, reason, msg string) {
		if at.Before(now) {
			at = now
		}
		if best == nil || at.Before(best.at) {
			best = &exitPlan{at: at, code: code, reason: reason, message: msg}
		}
	}
	if rule := c.rule; rule != nil {
		if e := rule.Exit; e != nil {
			consider(c.startedAt.Add(e.After.D()), e.Code, cmp.Or(e.Reason, reasonFor(e.Code)), e.Message)
		}
		if d := rule.OOMKillAfter; d != nil {
			consider(c.startedAt.Add(d.D()), 137, "OOMKilled", "")
		}
	}
	if lim := c.resources.GetMemoryLimitInBytes(); lim > 0 && c.usage != nil {
		if t, ok := c.usage.Memory.FirstReach(float64(lim)); ok {
			consider(c.startedAt.Add(t), 137, "OOMKilled", "")
		}
	}
	c.plan = best
	if best != nil {
		if !best.at.After(now) {
			r.exitLocked(c, best.at, best.code, best.reason, best.message)
			return
		}
		r.scheduleLocked(c, best.at)
	}
}

// exitLocked ends a running container at the given time.
func (r *Runtime) exitLocked(c *container, at time.Time, code int32, reason, msg string) {
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return
	}
	r.stopLogLocked(c, at)
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.finishedAt = at
	c.exitCode, c.reason, c.message = code, reason, msg
	close(c.exited)
	c.gen++
	c.plan = nil
	c.refreshEntry()
	r.eventLocked(runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, c.id, c.sb, at)
}

func (r *Runtime) removeContainerLocked(c *container, now time.Time) {
	c.removed = true
	c.gen++
	r.ctrLabels.remove(c.cfg.Labels, c)
	delete(r.containers, c.id)
	delete(r.names, c.nameKey)
	for i, x := range c.sb.containers {
		if x == c {
			c.sb.containers = append(c.sb.containers[:i], c.sb.containers[i+1:]...)
			break
		}
	}
	r.ctrDead++
	if r.ctrDead > 64 && r.ctrDead > len(r.ctrOrder)/2 {
		out := r.ctrOrder[:0]
		for _, x := range r.ctrOrder {
			if !x.removed {
				out = append(out, x)
			}
		}
		clear(r.ctrOrder[len(out):])
		r.ctrOrder, r.ctrDead = out, 0
	}
	r.eventLocked(runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, c.id, c.sb, now)
}

// createContainerLocked makes a Created container in sb.
func (r *Runtime) createContainerLocked(c *script.Compiled, sb *sandbox, cfg *runtimeapi.ContainerConfig, sbCfg *runtimeapi.PodSandboxConfig, now time.Time) (*container, error) {
	md := cfg.GetMetadata()
	if md == nil || md.Name == "" {
		return nil, status.Error(codes.InvalidArgument, "container config must have metadata with a name")
	}
	if cfg.GetImage().GetImage() == "" {
		return nil, status.Error(codes.InvalidArgument, "container config must name an image")
	}
	if sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Errorf(codes.FailedPrecondition, "sandbox container %q is not running", sb.id)
	}
	// As containerd: a group alone names no user to run as (the agent gives the image's user).
	if sc := cfg.GetLinux().GetSecurityContext(); sc.GetRunAsGroup() != nil && sc.GetRunAsUser() == nil && sc.GetRunAsUsername() == "" {
		return nil, status.Errorf(codes.Unknown, "failed to generate user string: user group %q is specified without user", strconv.FormatInt(sc.GetRunAsGroup().GetValue(), 10))
	}
	im := r.lookupImageLocked(cfg.Image.Image)
	if im == nil {
		return nil, status.Errorf(codes.NotFound, "failed to resolve image %q: not found", cfg.Image.Image)
	}
	fs := r.fsUsageLocked(c, now)
	cfs := fs.image
	if c.ContainersOnRoot {
		cfs = fs.root
	}
	if cfs.used >= cfs.cfg.Capacity {
		return nil, status.Errorf(codes.Unknown, "failed to create containerd container: failed to prepare snapshot: mkdir %s/snapshots/new: no space left on device", cfs.cfg.Mountpoint)
	}
	smd := sb.cfg.Metadata
	key := fmt.Sprintf("%s_%s_%s_%s_%d", md.Name, smd.Name, smd.Namespace, smd.Uid, md.Attempt)
	if owner, ok := r.names[key]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "failed to reserve container name %q: name %q is reserved for %q", key, key, owner)
	}
	cfg = proto.Clone(cfg).(*runtimeapi.ContainerConfig)
	ct := &container{
		id: r.newIDLocked("container"), sb: sb, cfg: cfg, nameKey: key,
		annotations: cfg.Annotations, resources: cfg.GetLinux().GetResources(),
		imageID: im.id, imageRef: im.id, imageName: cfg.Image.Image,
		state: runtimeapi.ContainerState_CONTAINER_CREATED, createdAt: now, exited: make(chan struct{}),
	}
	if len(im.repoDigests) > 0 {
		ct.imageRef = im.repoDigests[0]
	}
	if len(im.repoTags) > 0 {
		ct.imageName = im.repoTags[0]
	}
	if im.uid != nil {
		ct.imageUID = *im.uid
	}
	logDir := sbCfg.GetLogDirectory()
	if logDir == "" {
		logDir = sb.cfg.GetLogDirectory()
	}
	if logDir != "" && cfg.LogPath != "" {
		ct.logPath = filepath.Join(logDir, cfg.LogPath)
	}
	r.idCounter++
	ct.seq = r.idCounter
	r.names[key] = ct.id
	r.containers[ct.id] = ct
	r.ctrOrder = append(r.ctrOrder, ct)
	r.ctrLabels.add(ct.cfg.Labels, ct)
	sb.containers = append(sb.containers, ct)
	ct.refreshEntry()
	r.eventLocked(runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, ct.id, sb, now)
	return ct, nil
}

// CreateContainer creates a container in a ready sandbox from a present image.
func (r *Runtime) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	return call(ctx, r, mCreateContainer, req, func(ctx context.Context, req *runtimeapi.CreateContainerRequest, cc *callCtx) (*runtimeapi.CreateContainerResponse, error) {
		return onSandbox(r, cc, req.PodSandboxId, notFound, func(c *script.Compiled, sb *sandbox, now time.Time) (*runtimeapi.CreateContainerResponse, error) {
			ct, err := r.createContainerLocked(c, sb, req.GetConfig(), req.GetSandboxConfig(), now)
			if err != nil {
				return nil, err
			}
			cc.resp = ct.id
			return &runtimeapi.CreateContainerResponse{ContainerId: ct.id}, nil
		})
	})
}

// StartContainer starts a created container; it then runs as its script says.
func (r *Runtime) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	return call(ctx, r, mStartContainer, req, func(ctx context.Context, req *runtimeapi.StartContainerRequest, cc *callCtx) (*runtimeapi.StartContainerResponse, error) {
		return onContainer(r, cc, req.ContainerId, notFound, func(sc *script.Compiled, c *container, now time.Time) (*runtimeapi.StartContainerResponse, error) {
			return r.startContainerLocked(sc, c, cc, now)
		})
	})
}

// startContainerLocked starts c, which the script's first matching rule then drives.
func (r *Runtime) startContainerLocked(sc *script.Compiled, c *container, cc *callCtx, now time.Time) (*runtimeapi.StartContainerResponse, error) {
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, status.Errorf(codes.FailedPrecondition, "failed to set starting state for container %q: container is in %s state", c.id, c.state)
	}
	if c.sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Errorf(codes.FailedPrecondition, "sandbox container %q is not running", c.sb.id)
	}
	for _, rule := range sc.Containers {
		if matches(&rule.Matcher, r, c) {
			c.rule = rule
			break
		}
	}
	if c.rule != nil && c.rule.StartError != "" {
		return nil, r.startFailedLocked(c, cc, now, c.rule.StartError)
	}
	var u *script.UsageCurves
	if c.rule != nil {
		u = c.rule.Curves
	}
	c.usage = u.Fill(sc.DefaultUsage)
	if err := r.startLogLocked(c); err != nil {
		return nil, r.startFailedLocked(c, cc, now, err.Error())
	}
	c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.startedAt = now
	c.pid = uint32(1000 + c.seq%60000)
	c.refreshEntry()
	r.eventLocked(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, c.id, c.sb, now)
	r.planLocked(c, now)
	cc.resp = c.state.String()
	return &runtimeapi.StartContainerResponse{}, nil
}

// startFailedLocked ends c, whose task could not start for the reason msg, and answers why.
func (r *Runtime) startFailedLocked(c *container, cc *callCtx, now time.Time, msg string) error {
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.finishedAt, c.exitCode, c.reason, c.message = now, 128, "StartError", msg
	close(c.exited)
	c.refreshEntry()
	r.eventLocked(runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, c.id, c.sb, now)
	cc.resp = "StartError"
	return status.Errorf(codes.Unknown, "failed to start containerd task %q: %s", c.id, msg)
}

// StopContainer sends the container SIGTERM and waits, on the clock, for it
// to exit: after the scripted stop delay, or killed (137) when the grace
// period (timeout seconds) runs out first. Stopping a container that is not
// running succeeds, and so does stopping an unknown one, as the CRI asks
// (the agent may retry a stop whose container is already gone).
func (r *Runtime) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	return call(ctx, r, mStopContainer, req, func(ctx context.Context, req *runtimeapi.StopContainerRequest, cc *callCtx) (*runtimeapi.StopContainerResponse, error) {
		// Under the lock the stop is planned; the wait for the exit is outside it.
		var c *container
		var wait *exitPlan
		var now time.Time
		resp, err := onContainer(r, cc, req.ContainerId, done, func(_ *script.Compiled, ct *container, t time.Time) (*runtimeapi.StopContainerResponse, error) {
			if ct.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
				cc.resp = ct.state.String()
				return &runtimeapi.StopContainerResponse{}, nil
			}
			c, now = ct, t
			wait = r.stopLocked(c, time.Duration(req.Timeout)*time.Second, now)
			return nil, nil
		})
		if c == nil {
			return resp, err
		}
		if wait != nil && wait.at.After(now) {
			// it may also end sooner (killed with its sandbox, or by KillContainer)
			if _, err := r.sleepOr(ctx, wait.at.Sub(now), c.exited); err != nil {
				return nil, ctxErr(err)
			}
			r.mu.Lock()
			r.reconcileLocked(r.now())
			r.mu.Unlock()
		}
		r.mu.Lock()
		cc.resp = fmt.Sprintf("exit_code=%d", c.exitCode)
		r.mu.Unlock()
		return &runtimeapi.StopContainerResponse{}, nil
	})
}

// stopLocked plans the exit of running c on SIGTERM with grace to exit before it is killed,
// unless an earlier exit is planned, and answers the plan in force.
func (r *Runtime) stopLocked(c *container, grace time.Duration, now time.Time) *exitPlan {
	var delay time.Duration
	var code int32
	if c.rule != nil && c.rule.Stop != nil {
		delay, code = c.rule.Stop.Delay.D(), c.rule.Stop.ExitCode
	}
	p := &exitPlan{stop: true, at: now.Add(delay), code: code, reason: reasonFor(code)}
	if grace <= 0 || delay >= grace {
		p = &exitPlan{stop: true, at: now.Add(max(grace, 0)), code: 137, reason: "Error"}
	}
	if c.plan == nil || p.at.Before(c.plan.at) {
		c.gen++
		c.plan = p
		if !p.at.After(now) {
			r.exitLocked(c, now, p.code, p.reason, p.message)
		} else {
			r.scheduleLocked(c, p.at)
		}
	}
	return c.plan
}

// RemoveContainer removes a container, killing it first when it runs (a
// running one is refused when the script sets node.forceRemove false);
// removing an absent container succeeds.
func (r *Runtime) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	return call(ctx, r, mRemoveContainer, req, func(ctx context.Context, req *runtimeapi.RemoveContainerRequest, cc *callCtx) (*runtimeapi.RemoveContainerResponse, error) {
		return onContainer(r, cc, req.ContainerId, done, func(sc *script.Compiled, c *container, now time.Time) (*runtimeapi.RemoveContainerResponse, error) {
			if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
				if !sc.ForceRemove {
					return nil, status.Errorf(codes.FailedPrecondition, "failed to remove container %q: container is running, stop it first", c.id)
				}
				r.exitLocked(c, now, 137, "Error", "")
			}
			r.removeContainerLocked(c, now)
			// Which instance went, so a trace of garbage collection reads by name.
			md := c.sb.cfg.GetMetadata()
			cc.resp = fmt.Sprintf("%s/%s %s attempt=%d", md.GetNamespace(), md.GetName(), c.cfg.GetMetadata().GetName(), c.cfg.GetMetadata().GetAttempt())
			return &runtimeapi.RemoveContainerResponse{}, nil
		})
	})
}

// wireMin is the list length from which the gRPC server sends
// ListContainers from per-container encodings cached across calls.
const wireMin = 128

func (r *Runtime) listContainers(f *runtimeapi.ContainerFilter, wantWire bool) ([]*runtimeapi.Container, mem.BufferSlice) {
	r.lockAtNow()
	defer r.mu.Unlock()
	src := r.ctrOrder
	if f.GetPodSandboxId() != "" {
		sb, err := r.lookupSandboxLocked(f.PodSandboxId)
		if err != nil {
			return []*runtimeapi.Container{}, nil
		}
		src = sb.containers
	} else if cands, ok := r.ctrLabels.candidates(f.GetLabelSelector()); ok {
		src = cands
	}
	out := make([]*runtimeapi.Container, 0, len(src))
	var sel []*container
	for _, c := range src {
		if !picked(c.removed, c.id, f.GetId(), c.cfg.Labels, f.GetLabelSelector()) || f.GetState() != nil && f.State.State != c.state {
			continue
		}
		out = append(out, c.entry)
		if wantWire {
			sel = append(sel, c)
		}
	}
	if len(sel) < wireMin {
		return out, nil
	}
	wire := make(mem.BufferSlice, len(sel))
	for i, c := range sel {
		wire[i] = mem.SliceBuffer(c.wireLocked())
	}
	return out, wire
}

// ListContainers lists containers, oldest first, by id (prefix), sandbox, state and labels.
func (r *Runtime) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	return r.listContainersRPC(ctx, req, nil)
}

// Containers is the ListContainers call without the response around its items, for a client in
// the same process: the response was an allocation at every relist of every simulated node.
func (r *Runtime) Containers(ctx context.Context, req *runtimeapi.ListContainersRequest) ([]*runtimeapi.Container, error) {
	return call(ctx, r, mListContainers, req, func(_ context.Context, req *runtimeapi.ListContainersRequest, cc *callCtx) ([]*runtimeapi.Container, error) {
		items, _ := r.listContainers(req.GetFilter(), false)
		cc.resp = countText("containers", len(items))
		return items, nil
	})
}

func (r *Runtime) listContainersRPC(ctx context.Context, req *runtimeapi.ListContainersRequest, wc *wireCodec) (*runtimeapi.ListContainersResponse, error) {
	return call(ctx, r, mListContainers, req, func(ctx context.Context, req *runtimeapi.ListContainersRequest, cc *callCtx) (*runtimeapi.ListContainersResponse, error) {
		items, wire := r.listContainers(req.GetFilter(), wc != nil)
		cc.resp = countText("containers", len(items))
		resp := &runtimeapi.ListContainersResponse{Containers: items}
		if wire != nil {
			wc.pending.Store(resp, wire)
		}
		return resp, nil
	})
}

// StreamContainers is ListContainers as a stream.
func (r *Runtime) StreamContainers(req *runtimeapi.StreamContainersRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamContainersResponse]) error {
	list := func() []*runtimeapi.Container {
		items, _ := r.listContainers(req.GetFilter(), false)
		return items
	}
	return streamList(stream.Context(), r, mStreamContainers, req, "containers", list, func(c []*runtimeapi.Container) error {
		return stream.Send(&runtimeapi.StreamContainersResponse{Containers: c})
	})
}

// ContainerStatus returns the container's status.
func (r *Runtime) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	return call(ctx, r, mContainerStatus, req, func(ctx context.Context, req *runtimeapi.ContainerStatusRequest, cc *callCtx) (*runtimeapi.ContainerStatusResponse, error) {
		return onContainer(r, cc, req.ContainerId, notFound, func(_ *script.Compiled, c *container, _ time.Time) (*runtimeapi.ContainerStatusResponse, error) {
			resp := &runtimeapi.ContainerStatusResponse{Status: r.containerStatusLocked(c)}
			if req.Verbose {
				resp.Info = map[string]string{"info": r.containerInfoLocked(c)}
			}
			cc.resp = c.state.String()
			return resp, nil
		})
	})
}

// UpdateContainerResources replaces a container's Linux resources (and adds
// annotations). A lower memory limit takes effect at once: a container
// already above it is OOM-killed.
func (r *Runtime) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	return call(ctx, r, mUpdateContainerResources, req, func(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest, cc *callCtx) (*runtimeapi.UpdateContainerResourcesResponse, error) {
		return onContainer(r, cc, req.ContainerId, notFound, func(_ *script.Compiled, c *container, now time.Time) (*runtimeapi.UpdateContainerResourcesResponse, error) {
			return r.updateResourcesLocked(c, req, cc, now)
		})
	})
}

// updateResourcesLocked gives c its new limits and annotations; limits below what it uses act at
// once.
func (r *Runtime) updateResourcesLocked(c *container, req *runtimeapi.UpdateContainerResourcesRequest, cc *callCtx, now time.Time) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	if c.state == runtimeapi.ContainerState_CONTAINER_EXITED || c.state == runtimeapi.ContainerState_CONTAINER_UNKNOWN {
		return nil, status.Errorf(codes.FailedPrecondition, "failed to update resources of container %q: container is in %s state", c.id, c.state)
	}
	if req.Linux != nil {
		c.resources = proto.Clone(req.Linux).(*runtimeapi.LinuxContainerResources)
	}
	if len(req.Annotations) > 0 {
		a := make(map[string]string, len(c.annotations)+len(req.Annotations))
		for k, v := range c.annotations {
			a[k] = v
		}
		for k, v := range req.Annotations {
			a[k] = v
		}
		c.annotations = a
		c.attrs = nil
		c.refreshEntry()
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		keep := c.plan
		r.planLocked(c, now)
		// a pending stop is not undone by new limits
		if keep != nil && keep.stop && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && (c.plan == nil || keep.at.Before(c.plan.at)) {
			c.gen++
			c.plan = keep
			r.scheduleLocked(c, keep.at)
		}
	}
	cc.resp = c.state.String()
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// KillContainer ends a running container now, as if its process died
// (for a simulator: a crash at a moment of its choosing). Reason defaults
// to Completed or Error by exit code.
func (r *Runtime) KillContainer(id string, exitCode int32, reason, message string) error {
	_, now := r.lockAtNow()
	defer r.mu.Unlock()
	c, err := r.lookupContainerLocked(id)
	if err != nil {
		return err
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return status.Errorf(codes.FailedPrecondition, "container %q is in %s state", c.id, c.state)
	}
	r.exitLocked(c, now, exitCode, cmp.Or(reason, reasonFor(exitCode)), message)
	return nil
}
