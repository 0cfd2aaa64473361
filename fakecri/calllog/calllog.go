package calllog

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/fakecri/script"
)

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
	// caller sent (a sandbox's cgroup parent, a container's mounts and security context). Read it
	// only: calls of a request without fields share one copy.
	Message proto.Message `json:"-"`
}

// Filter selects calls from the log.
type Filter struct {
	// Since returns calls with Seq greater than this.
	Since uint64
	// Method is a glob over method names ("" for all).
	Method string
	// Limit caps the number returned (0: no cap), keeping the earliest.
	Limit int
}

// Log is the calls in the order they arrived, the latest max of them; safe for concurrent use.
// Its first field is LastSeq's, so that a holder keeping the Log first in its own struct (fakecri's
// Runtime) has it on its first cache line.
type Log struct {
	seq     atomic.Uint64 // written under mu; read without it by LastSeq, every node's every simulated second
	mu      sync.Mutex
	max     int     // the most kept; older calls are dropped
	buf     []*Call // ring when full
	start   int     // index of the oldest
	dropped uint64
}

// New makes a log keeping the latest max calls.
func New(max int) *Log {
	l := &Log{}
	l.Init(max)
	return l
}

// Init makes l, a zero Log held in place, keep the latest max calls.
func (l *Log) Init(max int) { l.max = max }

// Add records c, numbering it.
func (l *Log) Add(c *Call) {
	l.mu.Lock()
	c.Seq = l.seq.Add(1)
	if len(l.buf) < l.max {
		l.buf = append(l.buf, c)
	} else {
		l.buf[l.start] = c
		l.start = (l.start + 1) % l.max
		l.dropped++
	}
	l.mu.Unlock()
}

// Finish records how c ended.
func (l *Log) Finish(c *Call, end time.Time, code codes.Code, msg, resp, fault string) {
	l.mu.Lock()
	c.End, c.Code, c.Error, c.Response, c.Fault = end, code.String(), msg, resp, fault
	l.mu.Unlock()
}

// List returns the calls f selects, oldest first.
func (l *Log) List(f Filter) []Call {
	return l.AppendList(nil, f)
}

// AppendList appends the calls f selects, oldest first, to dst and returns the extended slice:
// a reader that looks at the log again and again (a simulator, at every node's every look) keeps
// one array for the copies rather than a new one a look.
func (l *Log) AppendList(dst []Call, f Filter) []Call {
	g := script.CompileGlob(f.Method)
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(l.buf)
	// calls are ordered by Seq from l.start; find the first with Seq > Since
	first := sort.Search(n, func(i int) bool { return l.buf[(l.start+i)%n].Seq > f.Since })
	if first == n {
		return dst
	}
	size := n - first // at most: the method's glob may select fewer
	if f.Limit > 0 {
		size = min(size, f.Limit)
	}
	dst = slices.Grow(dst, size)
	added := 0
	for i := first; i < n; i++ {
		c := l.buf[(l.start+i)%n]
		if !g.Match(c.Method) {
			continue
		}
		dst = append(dst, *c)
		if added++; f.Limit > 0 && added >= f.Limit {
			break
		}
	}
	return dst
}

// Reset empties the log (Seq keeps counting).
func (l *Log) Reset() {
	l.mu.Lock()
	// The array is kept for the calls to come (a simulator empties a node's log at every look).
	clear(l.buf)
	l.buf, l.start, l.dropped = l.buf[:0], 0, 0
	l.mu.Unlock()
}

// LastSeq is the Seq of the latest call (0 if none).
func (l *Log) LastSeq() uint64 { return l.seq.Load() }

// Dropped counts calls dropped because the log was full.
func (l *Log) Dropped() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

// The copies of requests without fields an agent sends every second (its relist) or every status
// post, one each for every call: a logged Message is read, never changed.
var (
	noSandboxFilter     = &runtimeapi.ListPodSandboxRequest{}
	noContainerFilter   = &runtimeapi.ListContainersRequest{}
	noImageFsInfoFields = &runtimeapi.ImageFsInfoRequest{}
	notVerbose          = &runtimeapi.StatusRequest{}
	versionV1           = &runtimeapi.VersionRequest{Version: "v1"} // the CRI version an agent asks for
)

// CloneRequest is proto.Clone, by hand for the requests an agent sends every second, every pod
// sync or every status post: their few fields copied cost a tenth of the reflective copy.
func CloneRequest(req proto.Message) proto.Message {
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
		return noSandboxFilter
	case *runtimeapi.ListContainersRequest:
		if f := q.Filter; f != nil {
			return &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
				Id: f.Id, State: cloneContainerState(f.State), PodSandboxId: f.PodSandboxId, LabelSelector: cloneLabels(f.LabelSelector)}}
		}
		return noContainerFilter
	// The node status's calls, at every status post of every node.
	case *runtimeapi.StatusRequest:
		if !q.Verbose {
			return notVerbose
		}
		return &runtimeapi.StatusRequest{Verbose: true}
	case *runtimeapi.VersionRequest:
		if q.Version == versionV1.Version {
			return versionV1
		}
		return &runtimeapi.VersionRequest{Version: q.Version}
	case *runtimeapi.ImageFsInfoRequest:
		return noImageFsInfoFields
	case *runtimeapi.ListImagesRequest:
		if q.Filter == nil {
			return &runtimeapi.ListImagesRequest{}
		}
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

// Summarize is a request as the call log shows it: the fields that tell calls apart.
func Summarize(req proto.Message) string {
	switch q := req.(type) {
	case *runtimeapi.VersionRequest:
		if q.Version == versionV1.Version {
			return "version=v1"
		}
		return "version=" + q.Version
	case *runtimeapi.StatusRequest:
		if q.Verbose { // constants: a Sprintf at every status post of every node
			return "verbose=true"
		}
		return "verbose=false"
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
