package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/fakecri"
)

// A Recorder is a CRI proxy: it forwards every call of the RuntimeService and the ImageService, as
// the bytes it got, to an upstream runtime (containerd, say) and answers with the upstream's bytes,
// so the agent in front of it sees the real runtime. On the way it notes what the runtime did (the
// images pulled, with their sizes and pull times; the sandboxes and containers created, with their
// exits) and samples every container's usage every SamplePeriod, so that Script can write a
// fakecri script that plays the same node back.
type Recorder struct {
	rt     runtimeapi.RuntimeServiceClient
	img    runtimeapi.ImageServiceClient
	conn   *grpc.ClientConn
	clk    clock.Clock
	period time.Duration
	start  time.Time
	logs   bool

	mu         sync.Mutex
	version    *runtimeapi.VersionResponse
	cgroup     string
	preloaded  []string             // image tags present when the recording began
	images     map[string]*recImage // by the name pulled, in pull order (imageOrder)
	imageOrder []string
	sandboxes  map[string]*recSandbox
	containers map[string]*recContainer
	samples    int
}

// Options configure a Recorder.
type Options struct {
	// Upstream is the runtime's endpoint (unix:///run/containerd/containerd.sock).
	Upstream string
	// Clock times the calls and the samples (default: the wall clock).
	Clock clock.Clock
	// SamplePeriod is how often Run samples the containers' stats (default 10s).
	SamplePeriod time.Duration
	// Logs records each container's log lines, read from the log file the runtime wrote.
	Logs bool
}

type recImage struct {
	name  string
	ref   string
	size  uint64
	pulls []time.Duration // each pull's duration
}

type recSandbox struct {
	meta   *runtimeapi.PodSandboxMetadata
	logDir string
}

type recContainer struct {
	sandbox   string
	meta      *runtimeapi.ContainerMetadata
	logPath   string    // relative to the sandbox's log directory
	log       logTail   // its lines so far, read at each sample and at its exit (the agent may remove the file)
	started   time.Time // the runtime's start time
	finished  time.Time
	exitCode  int32
	reason    string
	stopAsked bool // the agent stopped it: its end is the agent's doing, not the workload's
	samples   []recSample
	lastCPU   *runtimeapi.CpuUsage
}

type recSample struct {
	at                            time.Duration // since the container started
	memory, disk, inodes, cpuRate float64
	hasCPU                        bool
}

// New connects to the upstream runtime and notes what it holds already: its version, its
// cgroup driver and the images present (the recording's preloaded images).
func New(ctx context.Context, o Options) (*Recorder, error) {
	if o.Clock == nil {
		o.Clock = clock.New()
	}
	if o.SamplePeriod <= 0 {
		o.SamplePeriod = 10 * time.Second
	}
	network, addr, err := fakecri.ParseEndpoint(o.Upstream)
	if err != nil {
		return nil, fmt.Errorf("--upstream: %w", err)
	}
	target := "unix://" + addr
	if network == "tcp" {
		target = "passthrough:///" + addr
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(fakecri.MaxMessageSize), grpc.MaxCallSendMsgSize(fakecri.MaxMessageSize)))
	if err != nil {
		return nil, err
	}
	r := &Recorder{
		rt: runtimeapi.NewRuntimeServiceClient(conn), img: runtimeapi.NewImageServiceClient(conn), conn: conn,
		clk: o.Clock, period: o.SamplePeriod, start: o.Clock.Now(), logs: o.Logs,
		images: map[string]*recImage{}, sandboxes: map[string]*recSandbox{}, containers: map[string]*recContainer{},
	}
	if r.version, err = r.rt.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		conn.Close()
		return nil, fmt.Errorf("upstream %s: %w", o.Upstream, err)
	}
	if rc, err := r.rt.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{}); err == nil && rc.GetLinux() != nil {
		if rc.GetLinux().GetCgroupDriver() == runtimeapi.CgroupDriver_CGROUPFS {
			r.cgroup = "cgroupfs"
		} else {
			r.cgroup = "systemd"
		}
	}
	list, err := r.img.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("upstream %s: ListImages: %w", o.Upstream, err)
	}
	for _, im := range list.GetImages() {
		r.preloaded = append(r.preloaded, im.GetRepoTags()...)
		for _, tag := range im.GetRepoTags() {
			r.noteImage(tag, im.GetId(), im.GetSize(), -1)
		}
	}
	sort.Strings(r.preloaded)
	return r, nil
}

// Close closes the connection to the upstream runtime.
func (r *Recorder) Close() error { return r.conn.Close() }

// SamplePeriod is how often Run samples.
func (r *Recorder) SamplePeriod() time.Duration { return r.period }

// Elapsed is how long the recording has run, on its clock.
func (r *Recorder) Elapsed() time.Duration { return r.clk.Since(r.start) }

// NewGRPCServer returns a server that forwards every call it gets to the upstream runtime.
func (r *Recorder) NewGRPCServer() *grpc.Server {
	return grpc.NewServer(grpc.ForceServerCodecV2(frameCodec{}), grpc.UnknownServiceHandler(r.forward),
		grpc.MaxRecvMsgSize(fakecri.MaxMessageSize), grpc.MaxSendMsgSize(fakecri.MaxMessageSize))
}

// rawFrame is one message as the bytes on the wire: the proxy forwards what it got, unchanged.
type rawFrame struct{ b []byte }

type frameCodec struct{}

func (frameCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(v.(*rawFrame).b)}, nil
}

func (frameCodec) Unmarshal(data mem.BufferSlice, v any) error {
	v.(*rawFrame).b = data.Materialize()
	return nil
}

func (frameCodec) Name() string { return grpcproto.Name }

// forward relays one call, of any kind (unary or streaming), and observes its first request and
// each answer.
func (r *Recorder) forward(_ any, ss grpc.ServerStream) error {
	method, ok := grpc.MethodFromServerStream(ss)
	if !ok {
		return errors.New("recorder: no method in the stream")
	}
	ctx, cancel := context.WithCancel(ss.Context())
	defer cancel()
	cs, err := r.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method, grpc.ForceCodecV2(frameCodec{}))
	if err != nil {
		return err
	}
	began := r.clk.Now()
	// first carries the call's first request to the answer's observer (closed if none came); a
	// failure on the way up ends the upstream stream, and so the loop below.
	first := make(chan []byte, 1)
	go func() {
		sent := false
		defer func() {
			if !sent {
				close(first)
			}
		}()
		for {
			f := &rawFrame{}
			if err := ss.RecvMsg(f); err != nil {
				if errors.Is(err, io.EOF) {
					_ = cs.CloseSend()
				} else {
					cancel()
				}
				return
			}
			if !sent {
				sent = true
				first <- f.b
				r.observeRequest(method, f.b)
			}
			if err := cs.SendMsg(f); err != nil {
				return
			}
		}
	}()
	var req []byte
	for n := 0; ; n++ {
		f := &rawFrame{}
		if err := cs.RecvMsg(f); err != nil {
			if errors.Is(err, io.EOF) {
				ss.SetTrailer(cs.Trailer())
				return nil
			}
			return err // the upstream's status, as it gave it
		}
		if n == 0 {
			if md, err := cs.Header(); err == nil {
				_ = ss.SendHeader(md)
			}
			req = <-first
		}
		if err := ss.SendMsg(f); err != nil {
			return err
		}
		if n == 0 {
			r.observeAnswer(ctx, method, req, f.b, r.clk.Since(began))
		}
	}
}

// observeRequest notes what must be known before the runtime acts: that the agent stopped a
// container (its exit is then not the workload's own).
func (r *Recorder) observeRequest(method string, req []byte) {
	if !strings.HasSuffix(method, "/StopContainer") {
		return
	}
	var q runtimeapi.StopContainerRequest
	if proto.Unmarshal(req, &q) != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.containers[q.GetContainerId()]; c != nil && c.finished.IsZero() {
		c.stopAsked = true
	}
}

// observeAnswer notes what a call did, from its request and its answer.
func (r *Recorder) observeAnswer(ctx context.Context, method string, req, resp []byte, took time.Duration) {
	name := method[strings.LastIndex(method, "/")+1:]
	switch name {
	case "PullImage":
		var q runtimeapi.PullImageRequest
		var a runtimeapi.PullImageResponse
		if proto.Unmarshal(req, &q) != nil || proto.Unmarshal(resp, &a) != nil {
			return
		}
		var size uint64
		if st, err := r.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: a.GetImageRef()}}); err == nil {
			size = st.GetImage().GetSize()
		}
		r.mu.Lock()
		r.noteImage(q.GetImage().GetImage(), a.GetImageRef(), size, took)
		r.mu.Unlock()
	case "RunPodSandbox":
		var q runtimeapi.RunPodSandboxRequest
		var a runtimeapi.RunPodSandboxResponse
		if proto.Unmarshal(req, &q) != nil || proto.Unmarshal(resp, &a) != nil {
			return
		}
		r.mu.Lock()
		r.sandboxes[a.GetPodSandboxId()] = &recSandbox{meta: q.GetConfig().GetMetadata(), logDir: q.GetConfig().GetLogDirectory()}
		r.mu.Unlock()
	case "CreateContainer":
		var q runtimeapi.CreateContainerRequest
		var a runtimeapi.CreateContainerResponse
		if proto.Unmarshal(req, &q) != nil || proto.Unmarshal(resp, &a) != nil {
			return
		}
		r.mu.Lock()
		r.containers[a.GetContainerId()] = &recContainer{sandbox: q.GetPodSandboxId(), meta: q.GetConfig().GetMetadata(),
			logPath: q.GetConfig().GetLogPath()}
		r.mu.Unlock()
	case "ContainerStatus":
		var a runtimeapi.ContainerStatusResponse
		if proto.Unmarshal(resp, &a) != nil {
			return
		}
		r.mu.Lock()
		r.noteStatus(a.GetStatus())
		r.mu.Unlock()
	}
}

// noteImage records an image by the name it was pulled (or listed) as; took < 0 is an image present
// before the recording.
func (r *Recorder) noteImage(name, ref string, size uint64, took time.Duration) {
	im := r.images[name]
	if im == nil {
		im = &recImage{name: name}
		r.images[name] = im
		r.imageOrder = append(r.imageOrder, name)
	}
	im.ref = ref
	if size > 0 {
		im.size = size
	}
	if took >= 0 {
		im.pulls = append(im.pulls, took)
	}
}

// noteStatus records a container's start and exit as the runtime reports them.
func (r *Recorder) noteStatus(st *runtimeapi.ContainerStatus) {
	c := r.containers[st.GetId()]
	if c == nil {
		return
	}
	if st.GetStartedAt() > 0 {
		c.started = time.Unix(0, st.GetStartedAt())
	}
	if st.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED && st.GetFinishedAt() > 0 && c.finished.IsZero() {
		c.finished = time.Unix(0, st.GetFinishedAt())
		c.exitCode = st.GetExitCode()
		c.reason = st.GetReason()
		r.readLogs(c)
	}
}

// readLogs reads what c's log file gained since the last read, when logs are recorded.
func (r *Recorder) readLogs(c *recContainer) {
	sb := r.sandboxes[c.sandbox]
	if !r.logs || sb == nil || sb.logDir == "" || c.logPath == "" {
		return
	}
	c.log.read(filepath.Join(sb.logDir, c.logPath))
}

// Run samples every SamplePeriod until ctx ends.
func (r *Recorder) Run(ctx context.Context) {
	t := r.clk.Ticker(r.period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = r.Sample(ctx)
		}
	}
}

// Sample reads every recorded container's stats and the status of those not yet seen exited.
func (r *Recorder) Sample(ctx context.Context) error {
	stats, err := r.rt.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{})
	if err != nil {
		return fmt.Errorf("ListContainerStats: %w", err)
	}
	r.mu.Lock()
	var open []string
	for id, c := range r.containers {
		if c.finished.IsZero() {
			open = append(open, id)
		}
	}
	r.mu.Unlock()
	sort.Strings(open)
	statuses := make([]*runtimeapi.ContainerStatus, 0, len(open))
	for _, id := range open {
		st, err := r.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		if err == nil {
			statuses = append(statuses, st.GetStatus())
		}
	}
	now := r.clk.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples++
	for _, st := range statuses {
		r.noteStatus(st)
		if c := r.containers[st.GetId()]; c != nil && c.finished.IsZero() {
			r.readLogs(c)
		}
	}
	for _, s := range stats.GetStats() {
		c := r.containers[s.GetAttributes().GetId()]
		if c == nil || c.started.IsZero() || !c.finished.IsZero() {
			continue
		}
		at := now.Sub(c.started)
		if at < 0 {
			at = 0
		}
		smp := recSample{at: at, memory: float64(s.GetMemory().GetWorkingSetBytes().GetValue()),
			disk: float64(s.GetWritableLayer().GetUsedBytes().GetValue()), inodes: float64(s.GetWritableLayer().GetInodesUsed().GetValue())}
		if cpu := s.GetCpu(); cpu != nil && cpu.GetUsageCoreNanoSeconds() != nil {
			if p := c.lastCPU; p != nil && cpu.GetTimestamp() > p.GetTimestamp() {
				smp.cpuRate = float64(cpu.GetUsageCoreNanoSeconds().GetValue()-p.GetUsageCoreNanoSeconds().GetValue()) /
					float64(cpu.GetTimestamp()-p.GetTimestamp())
				smp.hasCPU = true
			}
			c.lastCPU = cpu
		}
		c.samples = append(c.samples, smp)
	}
	return nil
}

// Samples is how many sampling rounds the recording has made.
func (r *Recorder) Samples() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.samples
}
