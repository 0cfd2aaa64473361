package fakecri

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/script"
)

type sandbox struct {
	id         string
	seq        uint64
	cfg        *runtimeapi.PodSandboxConfig
	handler    string
	state      runtimeapi.PodSandboxState
	createdAt  time.Time
	stoppedAt  time.Time
	ip         netip.Addr
	nameKey    string
	pid        uint32
	resources  *runtimeapi.LinuxContainerResources
	overhead   *runtimeapi.LinuxContainerResources
	containers []*container // live (not removed), in creation order
	removed    bool
	entry      *runtimeapi.PodSandbox // cached list entry; replaced, never modified
	// attrs is what every stats answer of the sandbox names it by (its config never changes),
	// made at its first; shared, never modified.
	attrs *runtimeapi.PodSandboxAttributes
	// hostNet is hostNetwork(), read once: an eviction round asks it of every sandbox.
	hostNet bool
}

func (sb *sandbox) hostNetwork() bool {
	return sb.cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE
}

func (sb *sandbox) refreshEntry() {
	sb.entry = &runtimeapi.PodSandbox{
		Id:             sb.id,
		Metadata:       sb.cfg.Metadata,
		State:          sb.state,
		CreatedAt:      ts(sb.createdAt),
		Labels:         sb.cfg.Labels,
		Annotations:    sb.cfg.Annotations,
		RuntimeHandler: sb.handler,
	}
}

func (r *Runtime) sandboxStatusLocked(sb *sandbox) *runtimeapi.PodSandboxStatus {
	ns := sb.cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns == nil {
		ns = &runtimeapi.NamespaceOption{}
	}
	st := &runtimeapi.PodSandboxStatus{
		Id:             sb.id,
		Metadata:       sb.cfg.Metadata,
		State:          sb.state,
		CreatedAt:      ts(sb.createdAt),
		Network:        &runtimeapi.PodSandboxNetworkStatus{},
		Linux:          &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: ns}},
		Labels:         sb.cfg.Labels,
		Annotations:    sb.cfg.Annotations,
		RuntimeHandler: sb.handler,
	}
	if sb.ip.IsValid() {
		st.Network.Ip = sb.ip.String()
	}
	return st
}

// lookupSandboxLocked finds a sandbox by id or unique id prefix.
func (r *Runtime) lookupSandboxLocked(id string) (*sandbox, error) {
	return lookupLocked(r.sandboxes, r.sbOrder, id, "pod sandbox", "sandbox", func(sb *sandbox) (string, bool) { return sb.id, !sb.removed })
}

func (r *Runtime) allocIPLocked(c *script.Compiled, id string) (netip.Addr, error) {
	p := r.podCIDR
	if !p.IsValid() {
		p = c.PodCIDR
	}
	first := p.Addr().Next().Next() // .0 is the network, .1 the gateway
	b := p.Addr().As4()
	bits := p.Bits()
	for i := 0; i < 4; i++ {
		for j := 0; j < 8; j++ {
			if i*8+j >= bits {
				b[i] |= 0x80 >> j
			}
		}
	}
	broadcast := netip.AddrFrom4(b)
	start := r.ipCursor
	if !p.Contains(start) || start.Less(first) || start == broadcast {
		start = first
	}
	for a := start; ; {
		if _, used := r.ipUsed[a]; !used {
			r.ipUsed[a] = id
			r.ipCursor = a.Next()
			return a, nil
		}
		if a = a.Next(); a == broadcast {
			a = first
		}
		if a == start {
			return netip.Addr{}, fmt.Errorf("failed to allocate an IP in %s: range is full", p)
		}
	}
}

// runSandboxLocked creates a ready sandbox.
func (r *Runtime) runSandboxLocked(c *script.Compiled, cfg *runtimeapi.PodSandboxConfig, handler string) (*sandbox, error) {
	md := cfg.GetMetadata()
	if md == nil || md.Name == "" || md.Namespace == "" || md.Uid == "" {
		return nil, status.Error(codes.InvalidArgument, "sandbox config must have metadata with name, namespace and uid")
	}
	if !contains(c.Handlers, handler) {
		return nil, status.Errorf(codes.InvalidArgument, "failed to get sandbox runtime: no runtime for %q is configured", handler)
	}
	key := fmt.Sprintf("%s_%s_%s_%d", md.Name, md.Namespace, md.Uid, md.Attempt)
	if owner, ok := r.names[key]; ok {
		return nil, status.Errorf(codes.AlreadyExists, "failed to reserve sandbox name %q: name %q is reserved for %q", key, key, owner)
	}
	cfg = proto.Clone(cfg).(*runtimeapi.PodSandboxConfig)
	sb := &sandbox{
		id: r.newIDLocked("sandbox"), cfg: cfg, handler: handler, nameKey: key,
		state: runtimeapi.PodSandboxState_SANDBOX_READY, createdAt: r.now(),
		resources: cfg.GetLinux().GetResources(), overhead: cfg.GetLinux().GetOverhead(),
	}
	sb.hostNet = sb.hostNetwork()
	if !sb.hostNet {
		if !c.NetworkReady.Status {
			return nil, status.Errorf(codes.Unknown, "failed to setup network for sandbox %q: %s", sb.id,
				cmp.Or(c.NetworkReady.Message, "cni plugin not initialized"))
		}
		ip, err := r.allocIPLocked(c, sb.id)
		if err != nil {
			return nil, status.Errorf(codes.Unknown, "failed to setup network for sandbox %q: %v", sb.id, err)
		}
		sb.ip = ip
	}
	r.ensureImageLocked(c, c.SandboxImage, true)
	r.idCounter++
	sb.seq = r.idCounter
	sb.pid = uint32(1000 + sb.seq%60000)
	r.names[key] = sb.id
	r.sandboxes[sb.id] = sb
	r.sbOrder = append(r.sbOrder, sb)
	r.sbLabels.add(sb.cfg.Labels, sb)
	sb.refreshEntry()
	r.eventLocked(runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, sb.id, sb, sb.createdAt)
	r.eventLocked(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, sb.id, sb, sb.createdAt)
	return sb, nil
}

// stopSandboxLocked kills what runs in sb and marks it not ready.
func (r *Runtime) stopSandboxLocked(sb *sandbox, now time.Time) {
	for _, c := range sb.containers {
		if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
			r.exitLocked(c, now, 137, "Error", "")
		}
	}
	if sb.state == runtimeapi.PodSandboxState_SANDBOX_READY {
		sb.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		sb.stoppedAt = now
		sb.refreshEntry()
		r.eventLocked(runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, sb.id, sb, now)
	}
}

func (r *Runtime) removeSandboxLocked(sb *sandbox, now time.Time) {
	for len(sb.containers) > 0 {
		r.removeContainerLocked(sb.containers[0], now)
	}
	sb.removed = true
	r.sbLabels.remove(sb.cfg.Labels, sb)
	delete(r.sandboxes, sb.id)
	delete(r.names, sb.nameKey)
	if sb.ip.IsValid() {
		delete(r.ipUsed, sb.ip)
	}
	r.sbDead++
	if r.sbDead > 64 && r.sbDead > len(r.sbOrder)/2 {
		out := r.sbOrder[:0]
		for _, x := range r.sbOrder {
			if !x.removed {
				out = append(out, x)
			}
		}
		clear(r.sbOrder[len(out):])
		r.sbOrder, r.sbDead = out, 0
	}
	r.eventLocked(runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, sb.id, sb, now)
}

// RunPodSandbox creates and starts a sandbox; it is ready on return.
func (r *Runtime) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	return call(ctx, r, mRunPodSandbox, req, func(ctx context.Context, req *runtimeapi.RunPodSandboxRequest, cc *callCtx) (*runtimeapi.RunPodSandboxResponse, error) {
		return locked(r, func(c *script.Compiled, _ time.Time) (*runtimeapi.RunPodSandboxResponse, error) {
			sb, err := r.runSandboxLocked(c, req.GetConfig(), req.GetRuntimeHandler())
			if err != nil {
				return nil, err
			}
			cc.resp = sb.id
			return &runtimeapi.RunPodSandboxResponse{PodSandboxId: sb.id}, nil
		})
	})
}

// StopPodSandbox kills the sandbox's containers and marks it not ready.
// Stopping a stopped or an unknown sandbox succeeds, as the CRI asks.
func (r *Runtime) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	return call(ctx, r, mStopPodSandbox, req, func(ctx context.Context, req *runtimeapi.StopPodSandboxRequest, cc *callCtx) (*runtimeapi.StopPodSandboxResponse, error) {
		return onSandbox(r, cc, req.PodSandboxId, done, func(_ *script.Compiled, sb *sandbox, now time.Time) (*runtimeapi.StopPodSandboxResponse, error) {
			r.stopSandboxLocked(sb, now)
			return &runtimeapi.StopPodSandboxResponse{}, nil
		})
	})
}

// RemovePodSandbox removes a sandbox and its containers, stopping it first
// when it is ready (refused when the script sets node.forceRemove false);
// an absent one is already removed.
func (r *Runtime) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	return call(ctx, r, mRemovePodSandbox, req, func(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest, cc *callCtx) (*runtimeapi.RemovePodSandboxResponse, error) {
		return onSandbox(r, cc, req.PodSandboxId, done, func(c *script.Compiled, sb *sandbox, now time.Time) (*runtimeapi.RemovePodSandboxResponse, error) {
			if sb.state == runtimeapi.PodSandboxState_SANDBOX_READY {
				if !c.ForceRemove {
					running := 0
					for _, ct := range sb.containers {
						if ct.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
							running++
						}
					}
					return nil, status.Errorf(codes.FailedPrecondition,
						"sandbox container %q is not fully stopped (%d running containers): stop the sandbox first", sb.id, running)
				}
				r.stopSandboxLocked(sb, now)
			}
			r.removeSandboxLocked(sb, now)
			return &runtimeapi.RemovePodSandboxResponse{}, nil
		})
	})
}

// PodSandboxStatus returns the sandbox's status and its containers' statuses.
func (r *Runtime) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	return call(ctx, r, mPodSandboxStatus, req, func(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest, cc *callCtx) (*runtimeapi.PodSandboxStatusResponse, error) {
		return onSandbox(r, cc, req.PodSandboxId, notFound, func(_ *script.Compiled, sb *sandbox, now time.Time) (*runtimeapi.PodSandboxStatusResponse, error) {
			resp := &runtimeapi.PodSandboxStatusResponse{
				Status:    r.sandboxStatusLocked(sb),
				Timestamp: ts(now),
			}
			for _, c := range sb.containers {
				resp.ContainersStatuses = append(resp.ContainersStatuses, r.containerStatusLocked(c))
			}
			if req.Verbose {
				resp.Info = map[string]string{"info": r.sandboxInfoLocked(sb)}
			}
			cc.resp = sb.state.String()
			return resp, nil
		})
	})
}

func (r *Runtime) sandboxInfoLocked(sb *sandbox) string {
	cfg, _ := protojson.Marshal(sb.cfg)
	pid := sb.pid
	ps := "running"
	if sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		pid, ps = 0, "deleted"
	}
	b, _ := json.Marshal(map[string]any{
		"pid":                pid,
		"processStatus":      ps,
		"netNamespaceClosed": sb.state != runtimeapi.PodSandboxState_SANDBOX_READY,
		"image":              r.cur.Load().SandboxImage,
		"snapshotKey":        sb.id,
		"snapshotter":        "overlayfs",
		"runtimeHandler":     sb.handler,
		"runtimeType":        "io.containerd.runc.v2",
		"runtimeOptions":     map[string]any{"systemd_cgroup": !r.cur.Load().Cgroupfs},
		"config":             json.RawMessage(orJSON(cfg)),
	})
	return string(b)
}

func orJSON(b []byte) []byte {
	if len(b) == 0 {
		return []byte("{}")
	}
	return b
}

// picked is what every list filter asks of a sandbox or container: that it is not removed, its id
// has the filter's prefix and its labels match the filter's selector (an empty one matches all).
func picked(removed bool, id, prefix string, labels, selector map[string]string) bool {
	return !removed && strings.HasPrefix(id, prefix) && matchLabels(selector, labels)
}

func matchLabels(sel, labels map[string]string) bool {
	for k, v := range sel {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	return true
}

func (r *Runtime) listSandboxes(f *runtimeapi.PodSandboxFilter) []*runtimeapi.PodSandbox {
	r.lockAtNow()
	defer r.mu.Unlock()
	src := r.sbOrder
	if cands, ok := r.sbLabels.candidates(f.GetLabelSelector()); ok {
		src = cands
	}
	out := make([]*runtimeapi.PodSandbox, 0, len(src))
	for _, sb := range src {
		if !picked(sb.removed, sb.id, f.GetId(), sb.cfg.Labels, f.GetLabelSelector()) || f.GetState() != nil && f.State.State != sb.state {
			continue
		}
		out = append(out, sb.entry)
	}
	return out
}

// ListPodSandbox lists sandboxes, oldest first, by id (prefix), state and labels.
func (r *Runtime) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	items, err := r.PodSandboxes(ctx, req)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ListPodSandboxResponse{Items: items}, nil
}

// PodSandboxes is the ListPodSandbox call without the response around its items, for a client in
// the same process: the response was an allocation at every relist of every simulated node.
func (r *Runtime) PodSandboxes(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) ([]*runtimeapi.PodSandbox, error) {
	list := func() []*runtimeapi.PodSandbox { return r.listSandboxes(req.GetFilter()) }
	return listCall(ctx, r, mListPodSandbox, req, "items", list, func(items []*runtimeapi.PodSandbox) []*runtimeapi.PodSandbox { return items })
}

// StreamPodSandboxes is ListPodSandbox as a stream.
func (r *Runtime) StreamPodSandboxes(req *runtimeapi.StreamPodSandboxesRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxesResponse]) error {
	list := func() []*runtimeapi.PodSandbox { return r.listSandboxes(req.GetFilter()) }
	return streamList(stream.Context(), r, mStreamPodSandboxes, req, "items", list, func(c []*runtimeapi.PodSandbox) error {
		return stream.Send(&runtimeapi.StreamPodSandboxesResponse{PodSandboxes: c})
	})
}

// UpdatePodSandboxResources records the sandbox's new resources.
func (r *Runtime) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	return call(ctx, r, mUpdatePodSandboxResources, req, func(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest, cc *callCtx) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		sb, err := r.lookupSandboxLocked(req.PodSandboxId)
		if err != nil {
			return nil, err
		}
		if req.Resources != nil {
			sb.resources = proto.Clone(req.Resources).(*runtimeapi.LinuxContainerResources)
		}
		if req.Overhead != nil {
			sb.overhead = proto.Clone(req.Overhead).(*runtimeapi.LinuxContainerResources)
		}
		return &runtimeapi.UpdatePodSandboxResourcesResponse{}, nil
	})
}
