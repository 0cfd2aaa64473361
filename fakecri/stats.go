package fakecri

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"orch.io/orch/fakecri/script"
)

type fsUse struct {
	cfg        script.FSConfig
	used       uint64
	inodesUsed uint64
}

type fsUsage struct{ image, root fsUse }

// writableLocked is what c has written to its writable layer by now.
func writable(c *container, now time.Time) (bytes, inodes float64) {
	if c.usage == nil || c.startedAt.IsZero() {
		return 0, 0
	}
	end := now
	if c.state == runtimeapi.ContainerState_CONTAINER_EXITED && !c.finishedAt.IsZero() {
		end = c.finishedAt
	}
	el := end.Sub(c.startedAt)
	return c.usage.Disk.At(el), c.usage.Inodes.At(el)
}

func clampAdd(base uint64, add float64, capacity uint64) uint64 {
	v := float64(base) + add
	if v > float64(capacity) {
		return capacity
	}
	return sat(v)
}

// VolumeUsage is what the containers wrote, by their usage's volumes curves, under mounts of
// hostPath: each running container's up to now, an exited one's up to its exit, until it is
// removed.
func (r *Runtime) VolumeUsage(hostPath string) uint64 {
	_, now := r.lockAtNow()
	defer r.mu.Unlock()
	return sat(r.volumeWritesLocked(now, func(m *runtimeapi.Mount) bool { return m.GetHostPath() == hostPath }))
}

// volumeWritesLocked adds up the volume writes to the mounts of.
func (r *Runtime) volumeWritesLocked(now time.Time, of func(*runtimeapi.Mount) bool) float64 {
	var sum float64
	for _, c := range r.ctrOrder {
		if c.removed || c.usage == nil || len(c.usage.Volumes) == 0 || c.startedAt.IsZero() {
			continue
		}
		end := now
		if c.state == runtimeapi.ContainerState_CONTAINER_EXITED && !c.finishedAt.IsZero() {
			end = c.finishedAt
		}
		for _, m := range c.cfg.GetMounts() {
			if curve, ok := c.usage.Volumes[m.GetContainerPath()]; ok && of(m) {
				sum += curve.At(end.Sub(c.startedAt))
			}
		}
	}
	return sum
}

// fsUsageLocked adds up what images, writable layers and volume writes (on the root
// filesystem, where the node keeps pod volumes) use.
func (r *Runtime) fsUsageLocked(c *script.Compiled, now time.Time) fsUsage {
	vb := r.volumeWritesLocked(now, func(*runtimeapi.Mount) bool { return true })
	var imgBytes, imgInodes float64
	for _, im := range r.imgOrder {
		imgBytes += float64(im.size)
		imgInodes += float64(im.inodes)
	}
	var wb, wi float64
	for _, ct := range r.ctrOrder {
		if ct.removed {
			continue
		}
		b, i := writable(ct, now)
		wb += b
		wi += i
	}
	if c.ContainersOnRoot {
		return fsUsage{
			image: fsUse{c.ImageFs, clampAdd(c.ImageFs.Used, imgBytes, c.ImageFs.Capacity), clampAdd(c.ImageFs.InodesUsed, imgInodes, c.ImageFs.Inodes)},
			root:  fsUse{c.RootFs, clampAdd(c.RootFs.Used, wb+vb, c.RootFs.Capacity), clampAdd(c.RootFs.InodesUsed, wi, c.RootFs.Inodes)},
		}
	}
	return fsUsage{
		image: fsUse{c.ImageFs, clampAdd(c.ImageFs.Used, imgBytes+wb, c.ImageFs.Capacity), clampAdd(c.ImageFs.InodesUsed, imgInodes+wi, c.ImageFs.Inodes)},
		root:  fsUse{c.RootFs, clampAdd(c.RootFs.Used, vb, c.RootFs.Capacity), c.RootFs.InodesUsed},
	}
}

// FilesystemStats is what a node agent's cadvisor would see of a filesystem.
type FilesystemStats struct {
	// Name is "imagefs" or "rootfs".
	Name            string `json:"name"`
	Mountpoint      string `json:"mountpoint"`
	CapacityBytes   uint64 `json:"capacityBytes"`
	UsedBytes       uint64 `json:"usedBytes"`
	AvailableBytes  uint64 `json:"availableBytes"`
	Inodes          uint64 `json:"inodes"`
	InodesUsed      uint64 `json:"inodesUsed"`
	InodesFree      uint64 `json:"inodesFree"`
	HoldsImages     bool   `json:"holdsImages"`
	HoldsContainers bool   `json:"holdsContainers"`
}

// Filesystems reports capacity and use of the image and root filesystems
// (the CRI carries no capacities; this is what cadvisor would add).
func (r *Runtime) Filesystems() []FilesystemStats {
	c, now := r.lockAtNow()
	defer r.mu.Unlock()
	return r.filesystemsLocked(c, now)
}

func (r *Runtime) filesystemsLocked(c *script.Compiled, now time.Time) []FilesystemStats {
	u := r.fsUsageLocked(c, now)
	mk := func(name string, f fsUse, imgs, ctrs bool) FilesystemStats {
		return FilesystemStats{
			Name: name, Mountpoint: f.cfg.Mountpoint, CapacityBytes: f.cfg.Capacity, UsedBytes: f.used,
			AvailableBytes: f.cfg.Capacity - f.used, Inodes: f.cfg.Inodes, InodesUsed: f.inodesUsed,
			InodesFree: f.cfg.Inodes - f.inodesUsed, HoldsImages: imgs, HoldsContainers: ctrs,
		}
	}
	return []FilesystemStats{
		mk("imagefs", u.image, true, !c.ContainersOnRoot),
		mk("rootfs", u.root, false, c.ContainersOnRoot),
	}
}

// cpuCap is the CPU limit in cores (+Inf without a quota).
func cpuCap(res *runtimeapi.LinuxContainerResources) float64 {
	if res.GetCpuQuota() > 0 && res.GetCpuPeriod() > 0 {
		return float64(res.CpuQuota) / float64(res.CpuPeriod)
	}
	return math.Inf(1)
}

type sample struct {
	mem, cpuRate, cpuTotal, disk, inodes, pids float64
}

func sampleUsage(u *script.UsageCurves, el time.Duration, res *runtimeapi.LinuxContainerResources) sample {
	if u == nil {
		return sample{}
	}
	capc := cpuCap(res)
	s := sample{
		mem:      u.Memory.At(el),
		cpuRate:  math.Min(u.CPU.At(el), capc),
		cpuTotal: u.CPU.IntegralCapped(el, capc),
		disk:     u.Disk.At(el),
		inodes:   u.Inodes.At(el),
		pids:     u.PIDs.At(el),
	}
	if lim := res.GetMemoryLimitInBytes(); lim > 0 && s.mem > float64(lim) {
		s.mem = float64(lim)
	}
	return s
}

func u64(v float64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: sat(v)} }

// values hands out the UInt64Values of one answer from a single allocation: an eviction round
// reads every sandbox's stats, a dozen values for each container and the sandbox.
type values []runtimeapi.UInt64Value

func (p *values) of(v float64) *runtimeapi.UInt64Value {
	s := *p
	s[0].Value = sat(v)
	*p = s[1:]
	return &s[0]
}

// containerStatsBlock is what one container's stats point to, allocated together.
type containerStatsBlock struct {
	stats    runtimeapi.ContainerStats
	cpu      runtimeapi.CpuUsage
	memory   runtimeapi.MemoryUsage
	writable runtimeapi.FilesystemUsage
	fsID     runtimeapi.FilesystemIdentifier
	swap     runtimeapi.SwapUsage
	values   [12]runtimeapi.UInt64Value
}

// sandboxStatsBlock is what one sandbox's own stats point to, allocated together.
type sandboxStatsBlock struct {
	stats   runtimeapi.PodSandboxStats
	linux   runtimeapi.LinuxPodSandboxStats
	cpu     runtimeapi.CpuUsage
	memory  runtimeapi.MemoryUsage
	process runtimeapi.ProcessUsage
	network runtimeapi.NetworkUsage
	eth0    runtimeapi.NetworkInterfaceUsage
	eths    [1]*runtimeapi.NetworkInterfaceUsage
	values  [12]runtimeapi.UInt64Value
}

// statsBlocks hands out the blocks of one answer, allocated together when the answer's size is
// known (an eviction round reads every sandbox's stats: three allocations rather than one a
// sandbox and one a container), one by one past what was counted.
type statsBlocks struct {
	sandboxes  []sandboxStatsBlock
	containers []containerStatsBlock
	lists      []*runtimeapi.ContainerStats
}

// statsBlocksFor counts the sandboxes of an answer and their containers.
func statsBlocksFor(sandboxes []*sandbox) *statsBlocks {
	n := containersOf(sandboxes)
	return &statsBlocks{
		sandboxes:  make([]sandboxStatsBlock, len(sandboxes)),
		containers: make([]containerStatsBlock, n),
		lists:      make([]*runtimeapi.ContainerStats, n),
	}
}

func containersOf(sandboxes []*sandbox) int {
	n := 0
	for _, sb := range sandboxes {
		n += len(sb.containers)
	}
	return n
}

func (a *statsBlocks) sandbox() *sandboxStatsBlock {
	if a == nil || len(a.sandboxes) == 0 {
		return &sandboxStatsBlock{}
	}
	b := &a.sandboxes[0]
	a.sandboxes = a.sandboxes[1:]
	return b
}

func (a *statsBlocks) container() *containerStatsBlock {
	if a == nil || len(a.containers) == 0 {
		return &containerStatsBlock{}
	}
	b := &a.containers[0]
	a.containers = a.containers[1:]
	return b
}

// list is an empty list of n containers' stats, with room for them (and no more: an answer's
// lists are cut from one array).
func (a *statsBlocks) list(n int) []*runtimeapi.ContainerStats {
	if a == nil || len(a.lists) < n {
		return make([]*runtimeapi.ContainerStats, 0, n)
	}
	l := a.lists[:0:n]
	a.lists = a.lists[n:]
	return l
}

// attrsLocked is what the container's stats name it by.
func (ct *container) attrsLocked() *runtimeapi.ContainerAttributes {
	if ct.attrs == nil {
		ct.attrs = &runtimeapi.ContainerAttributes{Id: ct.id, Metadata: ct.cfg.Metadata, Labels: ct.cfg.Labels, Annotations: ct.annotations}
	}
	return ct.attrs
}

// attrsLocked is what the sandbox's stats name it by.
func (sb *sandbox) attrsLocked() *runtimeapi.PodSandboxAttributes {
	if sb.attrs == nil {
		sb.attrs = &runtimeapi.PodSandboxAttributes{Id: sb.id, Metadata: sb.cfg.Metadata, Labels: sb.cfg.Labels, Annotations: sb.cfg.Annotations}
	}
	return sb.attrs
}

func (r *Runtime) containerStatsLocked(c *script.Compiled, ct *container, now time.Time) *runtimeapi.ContainerStats {
	st, _ := r.containerStatsSampledLocked(c, ct, now, nil)
	return st
}

// containerStatsSampledLocked is the container's stats and, for its sandbox's sums, the usage they
// were made of (zero unless it runs).
func (r *Runtime) containerStatsSampledLocked(c *script.Compiled, ct *container, now time.Time, blocks *statsBlocks) (*runtimeapi.ContainerStats, sample) {
	var s sample
	if ct.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		s = sampleUsage(ct.usage, now.Sub(ct.startedAt), ct.resources)
	}
	disk, inodes := writable(ct, now)
	t := ts(now)
	mount := c.ImageFs.Mountpoint
	if c.ContainersOnRoot {
		mount = c.RootFs.Mountpoint
	}
	b := blocks.container()
	v := values(b.values[:])
	b.cpu = runtimeapi.CpuUsage{Timestamp: t, UsageCoreNanoSeconds: v.of(s.cpuTotal * 1e9), UsageNanoCores: v.of(s.cpuRate * 1e9)}
	b.memory = runtimeapi.MemoryUsage{
		Timestamp: t, WorkingSetBytes: v.of(s.mem), UsageBytes: v.of(s.mem), RssBytes: v.of(s.mem),
		PageFaults: v.of(s.mem / 4096), MajorPageFaults: v.of(0),
	}
	b.fsID = runtimeapi.FilesystemIdentifier{Mountpoint: mount}
	b.writable = runtimeapi.FilesystemUsage{Timestamp: t, FsId: &b.fsID, UsedBytes: v.of(disk), InodesUsed: v.of(inodes)}
	b.swap = runtimeapi.SwapUsage{Timestamp: t, SwapAvailableBytes: v.of(0), SwapUsageBytes: v.of(0)}
	b.stats = runtimeapi.ContainerStats{Attributes: ct.attrsLocked(), Cpu: &b.cpu, Memory: &b.memory, WritableLayer: &b.writable, Swap: &b.swap}
	if lim := ct.resources.GetMemoryLimitInBytes(); lim > 0 && s.mem > 0 {
		b.memory.AvailableBytes = v.of(float64(lim) - s.mem)
	}
	return &b.stats, s
}

func (r *Runtime) sandboxStatsLocked(c *script.Compiled, sb *sandbox, now time.Time, blocks *statsBlocks) *runtimeapi.PodSandboxStats {
	t := ts(now)
	var sum sample
	ready := sb.state == runtimeapi.PodSandboxState_SANDBOX_READY
	if ready {
		sum = sampleUsage(c.SandboxUsage, now.Sub(sb.createdAt), nil)
	}
	b := blocks.sandbox()
	v := values(b.values[:])
	b.stats = runtimeapi.PodSandboxStats{Attributes: sb.attrsLocked(), Linux: &b.linux}
	if len(sb.containers) > 0 {
		b.linux.Containers = blocks.list(len(sb.containers))
	}
	for _, ct := range sb.containers {
		cs, s := r.containerStatsSampledLocked(c, ct, now, blocks)
		b.linux.Containers = append(b.linux.Containers, cs)
		sum.cpuRate += s.cpuRate
		sum.mem += s.mem
		sum.pids += s.pids
		sum.cpuTotal += float64(cs.Cpu.UsageCoreNanoSeconds.Value) / 1e9
	}
	b.cpu = runtimeapi.CpuUsage{Timestamp: t, UsageCoreNanoSeconds: v.of(sum.cpuTotal * 1e9), UsageNanoCores: v.of(sum.cpuRate * 1e9)}
	b.memory = runtimeapi.MemoryUsage{
		Timestamp: t, WorkingSetBytes: v.of(sum.mem), UsageBytes: v.of(sum.mem), RssBytes: v.of(sum.mem),
		PageFaults: v.of(sum.mem / 4096), MajorPageFaults: v.of(0),
	}
	b.process = runtimeapi.ProcessUsage{Timestamp: t, ProcessCount: v.of(sum.pids)}
	b.linux.Cpu, b.linux.Memory, b.linux.Process = &b.cpu, &b.memory, &b.process
	if !sb.hostNet {
		end := now
		if !ready {
			end = sb.stoppedAt
		}
		el := end.Sub(sb.createdAt).Seconds()
		b.eth0 = runtimeapi.NetworkInterfaceUsage{
			Name: "eth0", RxBytes: v.of(el * 2048), RxErrors: v.of(0), TxBytes: v.of(el * 1024), TxErrors: v.of(0),
		}
		b.eths[0] = &b.eth0
		b.network = runtimeapi.NetworkUsage{Timestamp: t, DefaultInterface: &b.eth0, Interfaces: b.eths[:]}
		b.linux.Network = &b.network
	}
	return &b.stats
}

// ContainerStats reports the container's usage now; a container that is not
// running uses no CPU or memory but keeps its writable layer.
func (r *Runtime) ContainerStats(ctx context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	return call(ctx, r, mContainerStats, req, func(ctx context.Context, req *runtimeapi.ContainerStatsRequest, cc *callCtx) (*runtimeapi.ContainerStatsResponse, error) {
		return onContainer(r, cc, req.ContainerId, notFound, func(c *script.Compiled, ct *container, now time.Time) (*runtimeapi.ContainerStatsResponse, error) {
			return &runtimeapi.ContainerStatsResponse{Stats: r.containerStatsLocked(c, ct, now)}, nil
		})
	})
}

func (r *Runtime) listContainerStats(f *runtimeapi.ContainerStatsFilter) []*runtimeapi.ContainerStats {
	c, now := r.lockAtNow()
	defer r.mu.Unlock()
	var out []*runtimeapi.ContainerStats
	for _, ct := range r.ctrOrder {
		if !picked(ct.removed, ct.id, f.GetId(), ct.cfg.Labels, f.GetLabelSelector()) || !strings.HasPrefix(ct.sb.id, f.GetPodSandboxId()) {
			continue
		}
		out = append(out, r.containerStatsLocked(c, ct, now))
	}
	return out
}

// ListContainerStats reports every container's usage (non-running ones with
// zero CPU and memory, as crictl stats -a expects).
func (r *Runtime) ListContainerStats(ctx context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	list := func() []*runtimeapi.ContainerStats { return r.listContainerStats(req.GetFilter()) }
	return listCall(ctx, r, mListContainerStats, req, "stats", list, func(st []*runtimeapi.ContainerStats) *runtimeapi.ListContainerStatsResponse {
		return &runtimeapi.ListContainerStatsResponse{Stats: st}
	})
}

// StreamContainerStats is ListContainerStats as a stream.
func (r *Runtime) StreamContainerStats(req *runtimeapi.StreamContainerStatsRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamContainerStatsResponse]) error {
	list := func() []*runtimeapi.ContainerStats { return r.listContainerStats(req.GetFilter()) }
	return streamList(stream.Context(), r, mStreamContainerStats, req, "stats", list, func(c []*runtimeapi.ContainerStats) error {
		return stream.Send(&runtimeapi.StreamContainerStatsResponse{ContainerStats: c})
	})
}

// PodSandboxStats reports the sandbox's usage: its containers plus its own.
func (r *Runtime) PodSandboxStats(ctx context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	return call(ctx, r, mPodSandboxStats, req, func(ctx context.Context, req *runtimeapi.PodSandboxStatsRequest, cc *callCtx) (*runtimeapi.PodSandboxStatsResponse, error) {
		return onSandbox(r, cc, req.PodSandboxId, notFound, func(c *script.Compiled, sb *sandbox, now time.Time) (*runtimeapi.PodSandboxStatsResponse, error) {
			return &runtimeapi.PodSandboxStatsResponse{Stats: r.sandboxStatsLocked(c, sb, now, nil)}, nil
		})
	})
}

func (r *Runtime) listSandboxStats(f *runtimeapi.PodSandboxStatsFilter, arena *StatsArena) []*runtimeapi.PodSandboxStats {
	c, now := r.lockAtNow()
	defer r.mu.Unlock()
	var in []*sandbox
	for _, sb := range r.sbOrder {
		// With no id asked for, only ready sandboxes are listed.
		if !picked(sb.removed, sb.id, f.GetId(), sb.cfg.Labels, f.GetLabelSelector()) || f.GetId() == "" && sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		in = append(in, sb)
	}
	if len(in) == 0 {
		return nil
	}
	blocks, out := arena.blocksFor(in)
	for i, sb := range in {
		out[i] = r.sandboxStatsLocked(c, sb, now, blocks)
	}
	return out
}

// ListPodSandboxStats reports ready sandboxes (or the one the filter names).
func (r *Runtime) ListPodSandboxStats(ctx context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	list := func() []*runtimeapi.PodSandboxStats { return r.listSandboxStats(req.GetFilter(), nil) }
	return listCall(ctx, r, mListPodSandboxStats, req, "stats", list, func(st []*runtimeapi.PodSandboxStats) *runtimeapi.ListPodSandboxStatsResponse {
		return &runtimeapi.ListPodSandboxStatsResponse{Stats: st}
	})
}

// StreamPodSandboxStats is ListPodSandboxStats as a stream.
func (r *Runtime) StreamPodSandboxStats(req *runtimeapi.StreamPodSandboxStatsRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxStatsResponse]) error {
	list := func() []*runtimeapi.PodSandboxStats { return r.listSandboxStats(req.GetFilter(), nil) }
	return streamList(stream.Context(), r, mStreamPodSandboxStats, req, "stats", list, func(c []*runtimeapi.PodSandboxStats) error {
		return stream.Send(&runtimeapi.StreamPodSandboxStatsResponse{PodSandboxStats: c})
	})
}

// ---- metrics ----

var (
	ctrLabelKeys = []string{"container", "pod", "namespace"}
	netLabelKeys = []string{"interface", "pod", "namespace"}
)

var metricDescriptors = []*runtimeapi.MetricDescriptor{
	{Name: "container_cpu_usage_nanoseconds_total", Help: "Cumulative CPU time consumed, in core-nanoseconds.", LabelKeys: ctrLabelKeys},
	{Name: "container_memory_working_set_bytes", Help: "Current working set, in bytes.", LabelKeys: ctrLabelKeys},
	{Name: "container_memory_usage_bytes", Help: "Current memory usage, in bytes.", LabelKeys: ctrLabelKeys},
	{Name: "container_fs_usage_bytes", Help: "Bytes used by the container's writable layer.", LabelKeys: ctrLabelKeys},
	{Name: "container_fs_inodes_used", Help: "Inodes used by the container's writable layer.", LabelKeys: ctrLabelKeys},
	{Name: "container_processes", Help: "Number of processes running in the container.", LabelKeys: ctrLabelKeys},
	{Name: "container_network_receive_bytes_total", Help: "Cumulative bytes received by the pod.", LabelKeys: netLabelKeys},
	{Name: "container_network_transmit_bytes_total", Help: "Cumulative bytes transmitted by the pod.", LabelKeys: netLabelKeys},
}

// ListMetricDescriptors describes the metrics ListPodSandboxMetrics returns.
func (r *Runtime) ListMetricDescriptors(ctx context.Context, req *runtimeapi.ListMetricDescriptorsRequest) (*runtimeapi.ListMetricDescriptorsResponse, error) {
	return call(ctx, r, mListMetricDescriptors, req, func(ctx context.Context, req *runtimeapi.ListMetricDescriptorsRequest, cc *callCtx) (*runtimeapi.ListMetricDescriptorsResponse, error) {
		return &runtimeapi.ListMetricDescriptorsResponse{Descriptors: metricDescriptors}, nil
	})
}

func (r *Runtime) sandboxMetrics() []*runtimeapi.PodSandboxMetrics {
	c, now := r.lockAtNow()
	defer r.mu.Unlock()
	t := ts(now)
	var out []*runtimeapi.PodSandboxMetrics
	for _, sb := range r.sbOrder {
		if sb.removed || sb.state != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		st := r.sandboxStatsLocked(c, sb, now, nil)
		pod, ns := sb.cfg.Metadata.GetName(), sb.cfg.Metadata.GetNamespace()
		pm := &runtimeapi.PodSandboxMetrics{PodSandboxId: sb.id}
		if n := st.Linux.Network; n != nil {
			lv := []string{n.DefaultInterface.Name, pod, ns}
			pm.Metrics = append(pm.Metrics,
				&runtimeapi.Metric{Name: "container_network_receive_bytes_total", Timestamp: t, MetricType: runtimeapi.MetricType_COUNTER, LabelValues: lv, Value: n.DefaultInterface.RxBytes},
				&runtimeapi.Metric{Name: "container_network_transmit_bytes_total", Timestamp: t, MetricType: runtimeapi.MetricType_COUNTER, LabelValues: lv, Value: n.DefaultInterface.TxBytes})
		}
		for i, cs := range st.Linux.Containers {
			ct := sb.containers[i]
			if ct.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
				continue
			}
			lv := []string{ct.cfg.Metadata.GetName(), pod, ns}
			s := sampleUsage(ct.usage, now.Sub(ct.startedAt), ct.resources)
			g := func(name string, v *runtimeapi.UInt64Value) *runtimeapi.Metric {
				return &runtimeapi.Metric{Name: name, Timestamp: t, MetricType: runtimeapi.MetricType_GAUGE, LabelValues: lv, Value: v}
			}
			cpu := g("container_cpu_usage_nanoseconds_total", cs.Cpu.UsageCoreNanoSeconds)
			cpu.MetricType = runtimeapi.MetricType_COUNTER
			pm.ContainerMetrics = append(pm.ContainerMetrics, &runtimeapi.ContainerMetrics{
				ContainerId: ct.id,
				Metrics: []*runtimeapi.Metric{
					cpu,
					g("container_memory_working_set_bytes", cs.Memory.WorkingSetBytes),
					g("container_memory_usage_bytes", cs.Memory.UsageBytes),
					g("container_fs_usage_bytes", cs.WritableLayer.UsedBytes),
					g("container_fs_inodes_used", cs.WritableLayer.InodesUsed),
					g("container_processes", u64(s.pids)),
				},
			})
		}
		out = append(out, pm)
	}
	return out
}

// ListPodSandboxMetrics reports metrics for ready sandboxes and their running containers.
func (r *Runtime) ListPodSandboxMetrics(ctx context.Context, req *runtimeapi.ListPodSandboxMetricsRequest) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
	return listCall(ctx, r, mListPodSandboxMetrics, req, "pods", r.sandboxMetrics, func(m []*runtimeapi.PodSandboxMetrics) *runtimeapi.ListPodSandboxMetricsResponse {
		return &runtimeapi.ListPodSandboxMetricsResponse{PodMetrics: m}
	})
}

// StreamPodSandboxMetrics is ListPodSandboxMetrics as a stream.
func (r *Runtime) StreamPodSandboxMetrics(req *runtimeapi.StreamPodSandboxMetricsRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxMetricsResponse]) error {
	return streamList(stream.Context(), r, mStreamPodSandboxMetrics, req, "pods", r.sandboxMetrics, func(c []*runtimeapi.PodSandboxMetrics) error {
		return stream.Send(&runtimeapi.StreamPodSandboxMetricsResponse{PodSandboxMetrics: c})
	})
}

// FsInfo answers a node agent's statfs of a mountpoint (the image or root filesystem), as its
// cadvisor would: the capacity and the bytes still available.
func (r *Runtime) FsInfo(mountpoint string) (capacity, available uint64, err error) {
	for _, f := range r.Filesystems() {
		if f.Mountpoint == mountpoint {
			return f.CapacityBytes, f.AvailableBytes, nil
		}
	}
	return 0, 0, fmt.Errorf("fakecri: no filesystem is mounted at %q", mountpoint)
}

// SandboxStats is ListPodSandboxStats of every ready sandbox without a call: what a node's cgroups
// show an observer that does not ask the runtime (a simulator's eviction observer), so it leaves
// no line in the call log. Given an arena, the answer is written over the arena's last, which the
// caller reads no more: a simulated cAdvisor reading every sandbox's stats once per instant, about
// 250 KB an answer for 110 pods, allocates them once rather than at every eviction round. A nil
// arena's answer is new.
func (r *Runtime) SandboxStats(arena *StatsArena) []*runtimeapi.PodSandboxStats {
	return r.listSandboxStats(nil, arena)
}

// StatsArena is the memory of one SandboxStats answer, for the next to be written over.
type StatsArena struct {
	all statsBlocks // as allocated: each answer's blocks are cut from it
	cut statsBlocks
	out []*runtimeapi.PodSandboxStats
}

// blocksFor are the blocks of an answer about sandboxes, and its list; a nil arena's new.
func (a *StatsArena) blocksFor(sandboxes []*sandbox) (*statsBlocks, []*runtimeapi.PodSandboxStats) {
	if a == nil {
		return statsBlocksFor(sandboxes), make([]*runtimeapi.PodSandboxStats, len(sandboxes))
	}
	n := containersOf(sandboxes)
	if cap(a.all.sandboxes) < len(sandboxes) || cap(a.all.containers) < n {
		a.all = *statsBlocksFor(sandboxes)
		a.out = make([]*runtimeapi.PodSandboxStats, len(sandboxes))
	}
	a.cut = statsBlocks{sandboxes: a.all.sandboxes[:len(sandboxes)], containers: a.all.containers[:n], lists: a.all.lists[:n]}
	// The last answer's messages are made anew: nothing of it is left in this one.
	clear(a.cut.sandboxes)
	clear(a.cut.containers)
	clear(a.cut.lists)
	return &a.cut, a.out[:len(sandboxes)]
}
