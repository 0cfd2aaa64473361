package fakecri

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/script"
)

type method int

// The CRI methods, numbered as script.Methods lists them.
const (
	mVersion method = iota
	mRunPodSandbox
	mStopPodSandbox
	mRemovePodSandbox
	mPodSandboxStatus
	mListPodSandbox
	mStreamPodSandboxes
	mCreateContainer
	mStartContainer
	mStopContainer
	mRemoveContainer
	mListContainers
	mStreamContainers
	mContainerStatus
	mUpdateContainerResources
	mReopenContainerLog
	mExecSync
	mExec
	mAttach
	mPortForward
	mContainerStats
	mListContainerStats
	mStreamContainerStats
	mPodSandboxStats
	mListPodSandboxStats
	mStreamPodSandboxStats
	mUpdateRuntimeConfig
	mStatus
	mCheckpointContainer
	mCheckpointPod
	mRestorePod
	mGetContainerEvents
	mListMetricDescriptors
	mListPodSandboxMetrics
	mStreamPodSandboxMetrics
	mRuntimeConfig
	mUpdatePodSandboxResources
	mListImages
	mStreamImages
	mImageStatus
	mPullImage
	mRemoveImage
	mImageFsInfo
	numMethods
)

func (m method) String() string { return script.Methods[m] }

// Call is one recorded call.
type Call struct {
	// Seq numbers calls in the order they arrived, from 1.
	Seq uint64 `json:"seq"`
	// Method is the RPC name without its service ("PullImage").
	Method string `json:"method"`
	// Start and End are times on the runtime's clock; End is zero while
	// the call is in flight.
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`
	// Request summarizes the request ("container_id=… timeout=30").
	Request string `json:"request"`
	// Code is the gRPC code name ("OK", "NotFound"); empty while in flight.
	Code string `json:"code"`
	// Error is the error message, if any.
	Error string `json:"error,omitempty"`
	// Response summarizes the answer (an id, a count).
	Response string `json:"response,omitempty"`
	// Fault names the fault rule that decided the call ("faults[2]").
	Fault string `json:"fault,omitempty"`
	// Message is a copy of the whole request as received, so a test can compare every field the
	// caller sent (a sandbox's cgroup parent, a container's mounts and security context).
	Message proto.Message `json:"-"`
}

// CallFilter selects calls from the log.
type CallFilter struct {
	// Since returns calls with Seq greater than this.
	Since uint64
	// Method is a glob over method names ("" for all).
	Method string
	// Limit caps the number returned (0: no cap), keeping the earliest.
	Limit int
}

type callLog struct {
	mu      sync.Mutex
	max     int
	buf     []*Call // ring when full
	start   int     // index of the oldest
	seq     uint64
	dropped uint64
}

func (l *callLog) add(c *Call) {
	l.mu.Lock()
	l.seq++
	c.Seq = l.seq
	if len(l.buf) < l.max {
		l.buf = append(l.buf, c)
	} else {
		l.buf[l.start] = c
		l.start = (l.start + 1) % l.max
		l.dropped++
	}
	l.mu.Unlock()
}

func (l *callLog) finish(c *Call, end time.Time, code codes.Code, msg, resp, fault string) {
	l.mu.Lock()
	c.End, c.Code, c.Error, c.Response, c.Fault = end, code.String(), msg, resp, fault
	l.mu.Unlock()
}

func (l *callLog) list(f CallFilter) []Call {
	g := script.CompileGlob(f.Method)
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.buf)
	// calls are ordered by Seq from l.start; find the first with Seq > Since
	first := sort.Search(n, func(i int) bool { return l.buf[(l.start+i)%n].Seq > f.Since })
	var out []Call
	for i := first; i < n; i++ {
		c := l.buf[(l.start+i)%n]
		if !g.Match(c.Method) {
			continue
		}
		out = append(out, *c)
		if f.Limit > 0 && len(out) >= f.Limit {
			break
		}
	}
	return out
}

func (l *callLog) reset() {
	l.mu.Lock()
	l.buf, l.start, l.dropped = nil, 0, 0
	l.mu.Unlock()
}

// Calls returns recorded calls, oldest first.
func (r *Runtime) Calls(f CallFilter) []Call { return r.log.list(f) }

// LastSeq is the Seq of the latest call (0 if none); pass it as
// CallFilter.Since to read only what comes after.
func (r *Runtime) LastSeq() uint64 {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	return r.log.seq
}

// DroppedCalls counts calls dropped from the log because it was full.
func (r *Runtime) DroppedCalls() uint64 {
	r.log.mu.Lock()
	defer r.log.mu.Unlock()
	return r.log.dropped
}

// ResetCalls empties the call log (Seq keeps counting).
func (r *Runtime) ResetCalls() { r.log.reset() }

// ---- the wrapper every RPC goes through ----

type callCtx struct {
	rec   *Call
	fault string
	resp  string
}

// begin counts the call in flight, records it and applies faults. A non-nil
// error means a fault answered the call; end must be called either way.
func (r *Runtime) begin(ctx context.Context, m method, req proto.Message) (*callCtx, error) {
	r.inflight.Add(1)
	cc := &callCtx{rec: &Call{Method: script.Methods[m], Start: r.now(), Request: summarize(req), Message: cloneRequest(req)}}
	r.log.add(cc.rec)
	c := r.cur.Load()
	if len(c.Faults[m]) == 0 {
		return cc, nil
	}
	var latency time.Duration
	var fire *script.CompiledFaultRule
	r.faultMu.Lock()
	for _, f := range c.Faults[m] {
		if !f.RequestGlob.Match(cc.rec.Request) {
			continue
		}
		if f.Error == nil && !f.Hang {
			// A rule that only delays delays with its chance.
			if f.Probability == 0 || f.Rand.Float64() < f.Probability {
				latency += f.Latency.D()
			}
			continue
		}
		latency += f.Latency.D()
		if fire != nil {
			continue
		}
		f.Seen++
		if f.Seen <= f.AfterCalls || (f.Times > 0 && f.Fired >= f.Times) {
			continue
		}
		if f.Probability > 0 && f.Rand.Float64() >= f.Probability {
			continue
		}
		f.Fired++
		fire = f
	}
	r.faultMu.Unlock()
	if latency > 0 {
		if err := r.sleep(ctx, latency); err != nil {
			cc.fault = "latency"
			return cc, ctxErr(err)
		}
	}
	if fire == nil {
		return cc, nil
	}
	cc.fault = fmt.Sprintf("faults[%d]", fire.Index)
	if fire.Hang {
		r.hang(ctx)
		return cc, status.Errorf(codes.DeadlineExceeded, "fakecri: %s hung until the caller gave up (%s)", script.Methods[m], cc.fault)
	}
	msg := fire.Error.Message
	if msg == "" {
		msg = fmt.Sprintf("fakecri: injected %s for %s", fire.Code, script.Methods[m])
	}
	return cc, status.Error(fire.Code, msg)
}

func (r *Runtime) end(cc *callCtx, err error) {
	code, msg := codes.OK, ""
	if err != nil {
		st, _ := status.FromError(err)
		code, msg = st.Code(), st.Message()
	}
	r.log.finish(cc.rec, r.now(), code, msg, cc.resp, cc.fault)
	r.inflight.Add(-1)
	r.signalChange()
}

// call runs one unary RPC through fault injection and the call log.
func call[Req proto.Message, Resp any](ctx context.Context, r *Runtime, m method, req Req,
	f func(context.Context, Req, *callCtx) (Resp, error)) (resp Resp, err error) {
	cc, err := r.begin(ctx, m, req)
	defer func() { r.end(cc, err) }()
	if err != nil {
		return resp, err
	}
	return f(ctx, req, cc)
}

// listCall runs a unary list RPC: list's items, counted in the call log's answer as noun=N, go out
// in the response wrap makes.
func listCall[Req proto.Message, Resp any, T any](ctx context.Context, r *Runtime, m method, req Req, noun string, list func() []T, wrap func([]T) Resp) (Resp, error) {
	return call(ctx, r, m, req, func(_ context.Context, _ Req, cc *callCtx) (Resp, error) {
		items := list()
		cc.resp = fmt.Sprintf("%s=%d", noun, len(items))
		return wrap(items), nil
	})
}

func ctxErr(err error) error {
	if errors.Is(err, context.DeadlineExceeded) {
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	if errors.Is(err, context.Canceled) {
		return status.Error(codes.Canceled, err.Error())
	}
	return err
}

// cloneRequest is proto.Clone, by hand for the requests an agent sends every second or every pod
// sync: their few fields copied cost a tenth of the reflective copy.
func cloneRequest(req proto.Message) proto.Message {
	switch q := req.(type) {
	case *runtimeapi.ContainerStatusRequest:
		return &runtimeapi.ContainerStatusRequest{ContainerId: q.ContainerId, Verbose: q.Verbose}
	case *runtimeapi.PodSandboxStatusRequest:
		return &runtimeapi.PodSandboxStatusRequest{PodSandboxId: q.PodSandboxId, Verbose: q.Verbose}
	case *runtimeapi.ListPodSandboxRequest:
		if f := q.Filter; f != nil {
			return &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
				Id: f.Id, State: cloneSandboxState(f.State), LabelSelector: cloneLabels(f.LabelSelector)}}
		}
		return &runtimeapi.ListPodSandboxRequest{}
	case *runtimeapi.ListContainersRequest:
		if f := q.Filter; f != nil {
			return &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
				Id: f.Id, State: cloneContainerState(f.State), PodSandboxId: f.PodSandboxId, LabelSelector: cloneLabels(f.LabelSelector)}}
		}
		return &runtimeapi.ListContainersRequest{}
	}
	return proto.Clone(req)
}

func cloneSandboxState(s *runtimeapi.PodSandboxStateValue) *runtimeapi.PodSandboxStateValue {
	if s == nil {
		return nil
	}
	return &runtimeapi.PodSandboxStateValue{State: s.State}
}

func cloneContainerState(s *runtimeapi.ContainerStateValue) *runtimeapi.ContainerStateValue {
	if s == nil {
		return nil
	}
	return &runtimeapi.ContainerStateValue{State: s.State}
}

// cloneLabels copies a selector as proto.Clone does: an empty one is left out.
func cloneLabels(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// ---- request summaries ----

func labelsText(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var sb strings.Builder
	for i, k := range keys {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(k)
		sb.WriteByte('=')
		sb.WriteString(m[k])
	}
	return sb.String()
}

func summarize(req proto.Message) string {
	switch q := req.(type) {
	case *runtimeapi.VersionRequest:
		return "version=" + q.Version
	case *runtimeapi.StatusRequest:
		return fmt.Sprintf("verbose=%t", q.Verbose)
	case *runtimeapi.RunPodSandboxRequest:
		md := q.GetConfig().GetMetadata()
		return fmt.Sprintf("name=%s namespace=%s uid=%s attempt=%d runtime_handler=%s",
			md.GetName(), md.GetNamespace(), md.GetUid(), md.GetAttempt(), q.RuntimeHandler)
	case *runtimeapi.StopPodSandboxRequest:
		return "pod_sandbox_id=" + q.PodSandboxId
	case *runtimeapi.RemovePodSandboxRequest:
		return "pod_sandbox_id=" + q.PodSandboxId
	case *runtimeapi.PodSandboxStatusRequest:
		return "pod_sandbox_id=" + q.PodSandboxId + " verbose=" + strconv.FormatBool(q.Verbose)
	case *runtimeapi.CreateContainerRequest:
		md := q.GetConfig().GetMetadata()
		line := fmt.Sprintf("pod_sandbox_id=%s name=%s attempt=%d image=%s", q.PodSandboxId,
			md.GetName(), md.GetAttempt(), q.GetConfig().GetImage().GetImage())
		// The memory manager's NUMA nodes, only where it chose some.
		if mems := q.GetConfig().GetLinux().GetResources().GetCpusetMems(); mems != "" {
			line += " cpuset_mems=" + mems
		}
		return line
	case *runtimeapi.StartContainerRequest:
		return "container_id=" + q.ContainerId
	case *runtimeapi.StopContainerRequest:
		return fmt.Sprintf("container_id=%s timeout=%d", q.ContainerId, q.Timeout)
	case *runtimeapi.RemoveContainerRequest:
		return "container_id=" + q.ContainerId
	case *runtimeapi.ContainerStatusRequest:
		return "container_id=" + q.ContainerId + " verbose=" + strconv.FormatBool(q.Verbose)
	case *runtimeapi.ContainerStatsRequest:
		return "container_id=" + q.ContainerId
	case *runtimeapi.ReopenContainerLogRequest:
		return "container_id=" + q.ContainerId
	case *runtimeapi.ExecSyncRequest:
		return fmt.Sprintf("container_id=%s cmd=%q timeout=%d", q.ContainerId, strings.Join(q.Cmd, " "), q.Timeout)
	case *runtimeapi.PullImageRequest:
		s := "image=" + q.GetImage().GetImage()
		if u := q.GetAuth().GetUsername(); u != "" {
			s += " auth_user=" + u
		}
		if md := q.GetSandboxConfig().GetMetadata(); md != nil {
			s += " pod=" + md.GetNamespace() + "/" + md.GetName()
		}
		return s
	case *runtimeapi.ImageStatusRequest:
		return fmt.Sprintf("image=%s verbose=%t", q.GetImage().GetImage(), q.Verbose)
	case *runtimeapi.RemoveImageRequest:
		return "image=" + q.GetImage().GetImage()
	case *runtimeapi.ListContainersRequest:
		return containerFilterText(q.Filter)
	case *runtimeapi.StreamContainersRequest:
		return containerFilterText(q.Filter)
	case *runtimeapi.ListPodSandboxRequest:
		return sandboxFilterText(q.Filter)
	case *runtimeapi.StreamPodSandboxesRequest:
		return sandboxFilterText(q.Filter)
	case *runtimeapi.ListImagesRequest:
		return "image=" + q.GetFilter().GetImage().GetImage()
	case *runtimeapi.StreamImagesRequest:
		return "image=" + q.GetFilter().GetImage().GetImage()
	}
	if req == nil {
		return ""
	}
	b, _ := prototext.MarshalOptions{}.Marshal(req)
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func containerFilterText(f *runtimeapi.ContainerFilter) string {
	var state string
	if f.GetState() != nil {
		state = f.State.State.String()
	}
	return filterText(f.GetId(), f.GetPodSandboxId(), state, f.GetLabelSelector())
}

func sandboxFilterText(f *runtimeapi.PodSandboxFilter) string {
	var state string
	if f.GetState() != nil {
		state = f.State.State.String()
	}
	return filterText(f.GetId(), "", state, f.GetLabelSelector())
}

// filterText is a list filter as the call log shows it: the fields it sets, in the CRI's order.
func filterText(id, sandboxID, state string, labels map[string]string) string {
	var parts []string
	if id != "" {
		parts = append(parts, "id="+id)
	}
	if sandboxID != "" {
		parts = append(parts, "pod_sandbox_id="+sandboxID)
	}
	if state != "" {
		parts = append(parts, "state="+state)
	}
	if len(labels) > 0 {
		parts = append(parts, "labels="+labelsText(labels))
	}
	return strings.Join(parts, " ")
}
