package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/featuregates"
	"orch.io/orch/components/orchlet/containerlogs"
	"orch.io/orch/components/orchlet/cpumanager"
	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/eviction"
	"orch.io/orch/components/orchlet/memorymanager"
	"orch.io/orch/components/orchlet/pods"
	"orch.io/orch/components/orchlet/pods/podsync"
	"orch.io/orch/components/orchlet/pods/prober"
	"orch.io/orch/components/orchlet/sources"
	"orch.io/orch/components/orchlet/topologymanager"
	"orch.io/orch/components/orchlet/volumestats"
)

// Deps is the world the agent runs in; production passes the real ones, the simulator fakes.
type Deps struct {
	Clock    clock.Clock
	NodeName string
	Runtime  cri.RuntimeService
	Images   cri.ImageManagerService
	// Sink receives recorded events: a log in standalone mode, the API server otherwise.
	Sink events.Sink
	// OnEventDropped, when set, hears of every event occurrence the --event-qps / --event-burst
	// limit drops, with the total dropped so far (a simulator traces each one).
	OnEventDropped func(e *eventsv1.Event, total uint64)
	// FS is the node's filesystem rooted at /, from which --pod-manifest-path and --resolv-conf
	// are read; nil reads the real one.
	FS fs.FS
	// HTTP fetches --manifest-url and runs httpGet probes; nil uses a client of its own.
	HTTP *http.Client
	// Dial opens tcpSocket and grpc probe connections; nil dials for real.
	Dial prober.Dialer
	// Version is the agent's major.minor, in the probes' User-Agent orch-probe/<Version>.
	Version string
	// Gates are the effective feature gates, parsed once from the configuration.
	Gates *featuregates.Gates
	// Cores is the node's CPU count, for --pods-per-core.
	Cores int
	// SourcesReady, when set, tells whether every pod source beyond the static ones (the API
	// server) has sent its pods; the runtime's pods are not judged orphans before.
	SourcesReady func() bool
	// PodLogsDir holds the pods' log directories; empty means /var/log/pods.
	PodLogsDir string
	// RootDir is --root-dir, where the static CPU manager keeps its state.
	RootDir string
	// CPUTopology reads the machine's CPUs for the static CPU manager, which refuses to start
	// without it.
	CPUTopology func() (*cpumanager.Topology, error)
	// NUMANodes reads the machine's NUMA nodes' memory for the Static memory manager, which
	// refuses to start without it; Reservation is node allocatable's reservation
	// (cm.Resources.Reservation) --reserved-memory must add up to.
	NUMANodes   func() ([]memorymanager.Node, error)
	Reservation corev1.ResourceList
	// PodNode is what the pod workers know of the machine; the zero value is a simulated node.
	PodNode pods.Node
	// PodWorkers is how many pods are synced at once (pods.Options.Workers); 0 syncs one item
	// at a time in a deterministic order, as a simulator needs.
	PodWorkers int
	// Observer, when set, runs the eviction manager on what it observes; Reclaimer is its
	// node-level reclaim, nil for the agent's own garbage collectors (EnableGC).
	Observer  eviction.Observer
	Reclaimer eviction.Reclaimer
	// Memcg are the host's memcg threshold notifications for --kernel-memcg-notification; nil
	// when it has none, MemcgUnavailable saying why.
	Memcg            *eviction.MemcgNotifications
	MemcgUnavailable string
	// DiskUsage measures the pods' local volumes and log directories for the eviction manager;
	// nil is volumestats.DiskUsage.
	DiskUsage func(path string) (volumestats.Usage, error)
	Logger    klog.Logger
}

// Agent is one node's orchlet in standalone mode.
type Agent struct {
	Sources *sources.Sources
	Pods    *pods.Manager
	Events  *events.Recorder
	// Logs rotates the containers' log files; only Run runs it, so a simulator stepping the
	// components makes no rotation calls.
	Logs *containerlogs.Rotator
	// CPUs is the CPU manager; only Run runs its reconcile loop.
	CPUs *cpumanager.Manager
	// Memory is the memory manager; only Run runs its reconcile loop.
	Memory *memorymanager.Manager
	// Topology is the topology manager; nil when it has nothing to align.
	Topology *topologymanager.Manager
	// GC is nil until EnableGC.
	GC *GC
	// Eviction is nil without an observer.
	Eviction *eviction.Manager
	// VolumeStats measures the pods' local volumes for the eviction manager; nil without it.
	VolumeStats *volumestats.Calculator

	clk         clock.Clock
	node        string
	started     time.Time
	runtime     cri.RuntimeService
	images      cri.ImageManagerService
	execTimeout time.Duration
	podCIDR     string
	logger      klog.Logger
	// watchLogs watches a followed log's directory: inotify on the machine's filesystem, none on
	// a simulated one (followers poll on the clock alone).
	watchLogs func(dir string) containerlogs.Notifier
	// forwarding is set while forward hands drained updates to the pods: the sources are
	// drained then, but the pods do not hold them yet.
	forwarding atomic.Bool
}

// New assembles the agent from its configuration.
func New(cfg *v1beta1.OrchletConfiguration, d Deps) (*Agent, error) {
	if d.Clock == nil || d.Runtime == nil || d.Images == nil || d.Sink == nil || d.NodeName == "" || d.Gates == nil {
		return nil, errors.New("agent: Clock, Runtime, Images, Sink, NodeName and Gates are required")
	}
	// Probes get the caller's client when given one, else the pod workers' own, which (as
	// Kubernetes' prober) does not verify certificates: the manifest URL's client must.
	var probes prober.HTTPDoer
	if d.HTTP != nil {
		probes = d.HTTP
	} else {
		d.HTTP = &http.Client{}
	}
	a := &Agent{clk: d.Clock, node: d.NodeName, started: d.Clock.Now(), runtime: d.Runtime, images: d.Images, execTimeout: cfg.RuntimeRequestTimeout.Duration, podCIDR: cfg.PodCIDR, logger: d.Logger}
	if d.FS == nil {
		a.watchLogs = func(dir string) containerlogs.Notifier { return sources.OSNotifier(dir) }
	}
	var err error
	a.Events, err = events.New(events.Options{
		Clock: d.Clock, NodeName: d.NodeName, QPS: cfg.EventRecordQPS, Burst: cfg.EventBurst, Sink: d.Sink,
		OnDrop: d.OnEventDropped,
		OnError: func(e *eventsv1.Event, err error) {
			a.logger.Error(err, "Recording an event failed", "reason", e.Reason, "regarding", e.Regarding.Name)
		},
	})
	if err != nil {
		return nil, fmt.Errorf("event recorder: %w", err)
	}
	polls, err := sources.FromConfig(cfg, d.FS, d.HTTP)
	if err != nil {
		return nil, fmt.Errorf("pod sources: %w", err)
	}
	a.Sources, err = sources.New(sources.Options{Clock: d.Clock, NodeName: d.NodeName, Reporter: sources.ReporterFunc(a.reportSourceProblem), Logger: d.Logger}, polls...)
	if err != nil {
		return nil, fmt.Errorf("pod sources: %w", err)
	}
	if a.Logs, err = containerlogs.FromConfig(cfg, d.Clock, d.Runtime, d.Logger); err != nil {
		return nil, err
	}
	if a.Memory, err = a.newMemoryManager(cfg, d); err != nil {
		return nil, err
	}
	if a.CPUs, err = a.newCPUManager(cfg, d); err != nil {
		return nil, err
	}
	if a.Topology, err = a.newTopologyManager(cfg, d); err != nil {
		return nil, err
	}
	var memory podsync.MemoryAssigner
	if a.Memory.Static() {
		memory = a.Memory
	}
	a.Pods, err = pods.New(pods.Options{
		Clock: d.Clock, Runtime: d.Runtime, Images: d.Images, Recorder: a.Events, Config: cfg, Gates: d.Gates,
		Cores: d.Cores, HTTP: probes, Dial: d.Dial, FS: d.FS, PodLogsDir: d.PodLogsDir, Logger: d.Logger, Version: d.Version,
		SourcesReady: a.sourcesReady(d.SourcesReady), CPUs: a.CPUs, Memory: memory, Node: d.PodNode, Admit: a.admit, Workers: d.PodWorkers,
		SizeLimitsEnforced: d.Observer != nil && cfg.LocalStorageCapacityIsolation && cfg.VolumeStatsAggPeriod.Duration > 0,
	})
	if err != nil {
		return nil, fmt.Errorf("pod workers: %w", err)
	}
	if err := a.newEviction(cfg, d); err != nil {
		return nil, err
	}
	return a, nil
}

// Runtime and Images are the CRI services the agent runs pods on.
func (a *Agent) Runtime() cri.RuntimeService     { return a.runtime }
func (a *Agent) Images() cri.ImageManagerService { return a.images }

// reportSourceProblem logs a manifest that could not be used and records it as a Warning event,
// regarding the pod when the manifest got that far and the node otherwise.
func (a *Agent) reportSourceProblem(p sources.Problem) {
	a.logger.Error(p.Err, "Pod manifest refused", "source", p.Source, "origin", p.Origin, "reason", p.Reason)
	regarding := events.NodeReference(a.node)
	if p.Pod != nil {
		regarding = events.PodReference(p.Pod)
	}
	a.Events.Eventf(regarding, events.Warning, p.Reason, "ReadManifest", "%s", p.String())
}

// Run runs every component's own loop until ctx ends, handing each poll's updates to the pod
// workers as soon as it produces them.
func (a *Agent) Run(ctx context.Context) error {
	if err := a.Start(ctx); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The log rotation and the CPU and memory managers' reconciles run only here: a simulator
	// makes no calls of theirs.
	loops := []func(context.Context) error{a.Logs.Run, a.CPUs.Run, a.Memory.Run, a.forward}
	for _, c := range a.Components() {
		loops = append(loops, c.Run)
	}
	errc := make(chan error, len(loops))
	for _, run := range loops {
		go func() { errc <- run(ctx) }()
	}
	var first error
	for range loops {
		if err := <-errc; err != nil && !errors.Is(err, context.Canceled) && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

func (a *Agent) forward(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-a.Sources.Ready():
			a.forwarding.Store(true)
			if us := a.Sources.Drain(); len(us) > 0 {
				a.Pods.Update(us...)
			}
			a.forwarding.Store(false)
		}
	}
}

// sourcesReady tells the pods when a pod the runtime has and no source names is an orphan: once
// every source has been read and the pods hold what it sent, and the other sources (the API
// server's) are ready. Before, a restarted agent killed every static pod it had running and made
// them again, the file source not yet read at its first relist. Polled is asked before
// forwarding: a drain it saw is either still being handed on, or handed.
func (a *Agent) sourcesReady(others func() bool) func() bool {
	return func() bool {
		return a.Sources.Polled() && !a.forwarding.Load() && (others == nil || others())
	}
}

// Start prepares the runtime for the agent's pods before any is synced: it hands --pod-cidr to the
// runtime, as the kubelet does in standalone mode, so pod IPs come from it (without --pod-cidr the
// runtime keeps its own range). Run and RunOnce call it; a simulator stepping the components
// itself calls it once first.
func (a *Agent) Start(ctx context.Context) error {
	if a.podCIDR == "" {
		return nil
	}
	err := a.runtime.UpdateRuntimeConfig(ctx, &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: a.podCIDR}})
	if err != nil {
		return fmt.Errorf("--pod-cidr %s: updating the runtime's configuration: %w", a.podCIDR, err)
	}
	return nil
}
