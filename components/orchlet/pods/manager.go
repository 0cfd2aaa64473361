package pods

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/featuregates"
	"orch.io/orch/components/orchlet/pods/backoff"
	"orch.io/orch/components/orchlet/pods/calls"
	"orch.io/orch/components/orchlet/pods/credentialprovider"
	"orch.io/orch/components/orchlet/pods/dns"
	"orch.io/orch/components/orchlet/pods/images"
	"orch.io/orch/components/orchlet/pods/podsync"
	"orch.io/orch/components/orchlet/pods/prober"
	"orch.io/orch/components/orchlet/pods/qos"
	"orch.io/orch/components/orchlet/pods/relist"
	"orch.io/orch/components/orchlet/pods/security"
	"orch.io/orch/components/orchlet/pods/status"
	"orch.io/orch/components/orchlet/pods/volumes"
	"orch.io/orch/components/orchlet/sources"
)

// DefaultRelistPeriod is how often the runtime is listed to notice containers that changed on their
// own, as Kubernetes' generic PLEG does.
const DefaultRelistPeriod = time.Second

// DefaultPodLogsDir is where pod log directories go, as in Kubernetes.
const DefaultPodLogsDir = "/var/log/pods"

// Recorder records events; *events.Recorder is one.
type Recorder interface {
	Eventf(regarding *corev1.ObjectReference, eventType, reason, action, noteFormat string, args ...any)
}

// Options are what a Manager needs from the agent.
type Options struct {
	Clock    clock.Clock
	Runtime  cri.RuntimeService
	Images   cri.ImageManagerService
	Recorder Recorder
	// Config supplies maxPods, podsPerCore, serializeImagePulls, registryPullQPS, registryBurst,
	// runtimeRequestTimeout, syncFrequency, clusterDNS, clusterDomain, resolvConf and
	// allowedUnsafeSysctls.
	Config *v1beta1.OrchletConfiguration
	// Gates are the effective feature gates, parsed once by the caller: ImageVolume and
	// PodReadyToStartContainersCondition.
	Gates *featuregates.Gates
	// Cores is the node's CPU count, for podsPerCore.
	Cores int
	// PodLogsDir holds each pod's log directory; empty means DefaultPodLogsDir.
	PodLogsDir string
	// HTTP and Dial run httpGet, tcpSocket and grpc probes and httpGet hooks; a simulator injects
	// fakes. Without HTTP, a client as Kubernetes' prober's: no keep-alives, TLS unverified.
	HTTP prober.HTTPDoer
	Dial prober.Dialer
	// Version is the agent's major.minor, sent as the User-Agent orch-probe/<Version> of httpGet
	// and grpc probes (Kubernetes' kube-probe/<major>.<minor>).
	Version string
	// FS is the node's filesystem rooted at /, from which --resolv-conf is read; nil reads the
	// machine's.
	FS fs.FS
	// RelistPeriod overrides DefaultRelistPeriod when positive; a simulation of a long quiet
	// stretch may relist less often.
	RelistPeriod time.Duration
	// SourcesReady, when set, tells whether every pod source has sent its pods; until then the
	// runtime's pods no source names are left alone, not torn down as orphans.
	SourcesReady func() bool
	// Node is what the workers know of the machine and the command line; the zero value is a
	// simulated node.
	Node Node
	// Admit, when set, admits each new pod before the other handlers (the eviction manager's).
	Admit AdmitFunc
	// SizeLimitsEnforced says the eviction manager evicts a pod over an emptyDir's sizeLimit: no
	// SizeLimitNotEnforced warning then.
	SizeLimitsEnforced bool
	// Logger defaults to klog's.
	Logger klog.Logger
	// CPUs, when set, gives each container its cpuset (--cpu-manager-policy).
	CPUs podsync.CPUAssigner
	// Memory, when set, gives each container its cpuset.mems (--memory-manager-policy).
	Memory podsync.MemoryAssigner
	// Workers is how many pods Step syncs at once, each pod's work still one item at a time in
	// order, as the kubelet's pod workers; 0 or 1 does every item in one deterministic order (a
	// simulator's).
	Workers int
}

// readNodeFile reads an absolute path (a relative one is taken from the working directory) from
// fsys, rooted at /, or from the machine's filesystem when fsys is nil.
func readNodeFile(fsys fs.FS, name string) ([]byte, error) {
	if fsys == nil {
		abs, err := filepath.Abs(name)
		if err != nil {
			return nil, err
		}
		fsys, name = os.DirFS("/"), abs
	}
	return fs.ReadFile(fsys, strings.TrimPrefix(filepath.ToSlash(name), "/"))
}

// Manager is the pod workers: it keeps the desired pods, admits them, and has each pod's work
// (syncs, probes) done in order through one queue, the relist and the resync among it, publishing
// the pods' statuses as they change.
type Manager struct {
	clk      clock.Clock
	rec      Recorder
	log      klog.Logger
	syncFreq time.Duration
	relist   time.Duration
	capacity int
	sysctls  *security.SysctlAllowlist
	node     Node
	tempRoot bool // RootDir was made by New for a simulated node, and goes when Run ends
	admit    AdmitFunc
	objects  volumes.Objects // nil: no API server to read configmaps and secrets from
	// sizeLimitsEnforced: no SizeLimitNotEnforced warning.
	sizeLimitsEnforced bool

	// The pod runtime's pieces: the sync, the runtime's relist, image pulls and volumes, the calls
	// they make and the statuses published.
	syncer    *podsync.Syncer
	relister  *relist.Relister
	images    *images.Puller
	volumes   *volumes.Manager
	calls     *calls.Tracker
	published *status.Cache
	qos       *qos.Manager

	// sourcesDelivered says the sources are ready and their pods handed over: until then a pod of the
	// runtime's or a pod cgroup is not judged an orphan.
	sourcesDelivered func() bool
	// cgroupsUnknownSince is since when each pod cgroup found has been unknown (housekeeping).
	cgroupsUnknownSince map[string]time.Time

	inbox     handoff[sources.Update]
	evictions handoff[evictRequest]
	// background: image pulls run in the background (not serializeImagePulls), so one may end
	// between Steps. With serialized pulls the puller never has one to hand over, and its struct
	// (a cache line of its own) is not read at every Idle and Step.
	background bool
	wake       chan struct{}

	workers int // pods synced at once; 1: one item at a time
	// busy holds the pods a worker is syncing, done hears of each one it finishes; only Step
	// reads or changes busy.
	busy map[types.UID]bool
	done chan types.UID
	// shared guards what Step and its pod workers share: the queue, touched, pods (which only
	// Step changes).
	shared sync.Mutex

	step     sync.Mutex // one Step at a time; guards everything below
	pods     map[types.UID]*podState
	admitted int
	queue    map[itemKey]time.Time
	order    dueHeap // the queue's items in popDue's order, guarded by shared
	// firstLive is true when order's first entry was found in the queue (firstLocked) and no
	// item left the queue since (an enqueue's entry is live, and comes first if it replaced the
	// first): the simulator asks for the first item at every instant, and the map lookup of its
	// key was most of the asking. Guarded by shared.
	firstLive bool
	touched   map[types.UID]bool // pods whose spec or status changed since the last publish
	started   bool
}

// podState is what the pod workers hold of one pod: its state across syncs, the back-off after a
// failed sync, and the copy of it Pods last published (nil once the pod was touched since).
type podState struct {
	*podsync.PodState
	syncErr backoff.Backoff
	snap    *corev1.Pod
	// synced is when the last sync that changed its sandboxes or containers ended: its next sync
	// decides on what a relist read after it.
	synced relist.Stamp
}

func newPodState(pod *corev1.Pod, now time.Time) *podState {
	return &podState{PodState: podsync.NewPodState(pod, now)}
}

// New checks o and returns a Manager whose first Step relists the runtime.
func New(o Options) (*Manager, error) {
	var errs []error
	if o.Clock == nil {
		errs = append(errs, errors.New("pods: a clock is required"))
	}
	if o.Runtime == nil || o.Images == nil {
		errs = append(errs, errors.New("pods: a runtime and an image service are required"))
	}
	if o.Recorder == nil {
		errs = append(errs, errors.New("pods: an event recorder is required"))
	}
	if o.Config == nil {
		errs = append(errs, errors.New("pods: a configuration is required"))
	}
	if o.Gates == nil {
		errs = append(errs, errors.New("pods: the feature gates are required"))
	}
	if o.Workers < 0 {
		errs = append(errs, fmt.Errorf("pods: Workers %d must not be negative", o.Workers))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	c := o.Config
	if c.RuntimeRequestTimeout.Duration <= 0 || c.SyncFrequency.Duration <= 0 {
		return nil, fmt.Errorf("pods: runtimeRequestTimeout %v and syncFrequency %v must be positive", c.RuntimeRequestTimeout.Duration, c.SyncFrequency.Duration)
	}
	sysctls, err := security.NewSysctlAllowlist(c.AllowedUnsafeSysctls)
	if err != nil {
		return nil, err
	}
	q, err := qos.New(c, qos.Host{CgroupV2: o.Node.CgroupV2, MemoryCapacity: o.Node.MemoryCapacity, HugePageSizes: o.Node.HugePageSizes, Cgroups: o.Node.Cgroups})
	if err != nil {
		return nil, err
	}
	m := &Manager{
		clk: o.Clock, rec: o.Recorder, log: o.Logger,
		sizeLimitsEnforced: o.SizeLimitsEnforced,
		syncFreq:           c.SyncFrequency.Duration,
		relist:             DefaultRelistPeriod,
		capacity:           Capacity(c.MaxPods, c.PodsPerCore, o.Cores),
		admit:              o.Admit,
		sysctls:            sysctls,
		published:          status.NewCache(),
		node:               o.Node,
		workers:            max(o.Workers, 1),
		busy:               map[types.UID]bool{},
		done:               make(chan types.UID, max(o.Workers, 1)),
		wake:               make(chan struct{}, 1),
		pods:               map[types.UID]*podState{},
		queue:              map[itemKey]time.Time{},
		touched:            map[types.UID]bool{},
		calls:              calls.New(o.Clock, c.RuntimeRequestTimeout.Duration),
		qos:                q,
	}
	if o.RelistPeriod > 0 {
		m.relist = o.RelistPeriod
	}
	logsDir := o.PodLogsDir
	if logsDir == "" {
		logsDir = DefaultPodLogsDir
	}
	if m.node.RootDir == "" {
		// A simulated node keeps its pods' volumes and files in a directory of its own.
		if m.node.RootDir, err = os.MkdirTemp("", "orchlet-root-"); err != nil {
			return nil, fmt.Errorf("pods: a root directory: %w", err)
		}
		m.tempRoot = true
	}
	if m.log.GetSink() == nil {
		m.log = klog.Background()
	}
	readFile := func(name string) ([]byte, error) { return readNodeFile(o.FS, name) }
	var resolvData []byte
	if c.ResolverConfig != "" {
		// The kubelet fails each sandbox when the file cannot be read; a node without it still
		// runs pods here, with the runtime's default resolver.
		if resolvData, err = readFile(c.ResolverConfig); err != nil {
			m.log.Error(err, "Cannot read the resolver configuration, pods get none of it", "resolvConf", c.ResolverConfig)
		}
	}
	m.volumes = volumes.New(volumes.Options{
		Clock: o.Clock, Recorder: o.Recorder, Logger: m.log, ImageVolumes: o.Gates.Enabled(featuregates.ImageVolume),
		ClusterDomain: c.ClusterDomain, ReadFile: readFile,
		Node: volumes.Node{Name: m.node.Name, HostIPs: m.node.HostIPs, Cores: o.Cores, MemoryCapacity: m.node.MemoryCapacity,
			RootDir: m.node.RootDir, SELinux: m.node.SELinux, Tmpfs: m.node.Tmpfs, SubPaths: m.node.SubPaths, Flex: m.node.Flex},
	})
	m.background = !c.SerializeImagePulls
	m.images = images.New(images.Options{Clock: o.Clock, Calls: m.calls, Images: o.Images, Recorder: o.Recorder, Logger: m.log,
		Serialize: c.SerializeImagePulls, QPS: c.RegistryPullQPS, Burst: c.RegistryBurst, Wake: m.poke, Plugins: m.node.Credentials})
	m.sourcesDelivered = m.delivered(o.SourcesReady)
	m.relister = relist.New(o.Runtime, m.calls, m.log, m.sourcesDelivered)
	m.syncer = podsync.New(podsync.Options{
		Clock: o.Clock, Calls: m.calls, Runtime: o.Runtime, Recorder: o.Recorder, Logger: m.log,
		Queue: workQueue{m}, Statuses: m.relister, LivePods: m.livePods, Images: m.images, Volumes: m.volumes, QoS: q, CPUs: o.CPUs, Memory: o.Memory, LogsDir: logsDir,
		Prober:   prober.New(prober.Options{Clock: o.Clock, Calls: m.calls, Runtime: o.Runtime, Recorder: o.Recorder, HTTP: o.HTTP, Dial: o.Dial, Version: o.Version}),
		DNS:      dns.New(o.Recorder, c.ClusterDNS, c.ClusterDomain, c.ResolverConfig, resolvData),
		Security: security.Host{SeccompDefault: m.node.SeccompDefault, RootDir: m.node.RootDir, ThermalThrottlePaths: m.node.ThermalThrottlePaths},
		Status: status.Generator{
			ReadyToStart: o.Gates.Enabled(featuregates.PodReadyToStartContainersCondition),
			ReadFile:     readFile,
			ContainerID:  m.relister.ContainerID,
		},
	})
	return m, nil
}

// Capacity is how many pods the node admits: maxPods, lowered to podsPerCore x cores when
// podsPerCore is positive, as Kubernetes' kubelet computes its pods capacity.
func Capacity(maxPods, podsPerCore int32, cores int) int {
	c := int(maxPods)
	if podsPerCore > 0 && int(podsPerCore)*cores < c {
		c = int(podsPerCore) * cores
	}
	return c
}

// delivered tells the relister when a pod of the runtime's that the pods do not hold is an
// orphan: the sources are ready and nothing they sent waits in the inbox. An update handed over
// after a Step applied the inbox names a pod the relist later in that Step would otherwise tear
// down: a restarted agent killed its running static pods so, and made them again.
func (m *Manager) delivered(sourcesReady func() bool) func() bool {
	return func() bool {
		return (sourcesReady == nil || sourcesReady()) && m.inbox.len() == 0
	}
}

// Update queues changes from the sources; the next Step applies them in order. It never blocks on
// the runtime.
func (m *Manager) Update(us ...sources.Update) {
	m.inbox.add(us...)
	m.poke()
}

// Step applies queued updates and does every queue item due now, one at a time in order, and
// returns how many items it did.
func (m *Manager) Step(ctx context.Context) int {
	m.step.Lock()
	defer m.step.Unlock()
	now := m.clk.Now()
	if !m.started {
		m.started = true
		m.enqueue(itemKey{kind: kindRelist}, now)
		m.enqueue(itemKey{kind: kindResync}, now.Add(m.syncFreq))
		if m.qos.MakesPodCgroups() {
			m.enqueue(itemKey{kind: kindHousekeeping}, now.Add(housekeepingPeriod))
		}
	}
	m.applyUpdates()
	m.applyEvictions()
	m.applyPulls()
	// Published after each item, not only at the end: a Step held for minutes by a pull shows
	// the pods it admitted, and those it already synced, meanwhile.
	m.publishTouched()
	if m.workers > 1 {
		return m.stepParallel(ctx)
	}
	n := 0
	for {
		k, ok := m.popDue(m.clk.Now())
		if !ok {
			break
		}
		n++
		m.do(ctx, k)
		m.reap(k.uid)
		m.publishTouched()
	}
	return n
}

// NextDeadline is when the earliest queued item is due; false when none is queued.
func (m *Manager) NextDeadline() (time.Time, bool) {
	m.step.Lock()
	defer m.step.Unlock()
	m.shared.Lock()
	defer m.shared.Unlock()
	first, found := m.firstLocked()
	return first.due, found
}

// Idle is true when no update waits to be applied and nothing in the queue is due now.
func (m *Manager) Idle() bool {
	if m.inbox.len() > 0 || m.background && m.images.Ended() || m.evictions.len() > 0 {
		return false
	}
	m.step.Lock()
	defer m.step.Unlock()
	if !m.started {
		return false
	}
	now := m.clk.Now()
	m.shared.Lock()
	defer m.shared.Unlock()
	first, found := m.firstLocked()
	return !found || first.due.After(now)
}

// Calls reports the Manager's calls in progress: Step's, and image pulls running in the
// background.
func (m *Manager) Calls() calls.State { return m.calls.State() }

// PeekCalls is Calls without its Changed channel (calls.Tracker.Peek).
func (m *Manager) PeekCalls() calls.State { return m.calls.Peek() }

// Run steps until ctx ends, sleeping on the clock until the next deadline or an Update.
func (m *Manager) Run(ctx context.Context) error {
	for {
		m.Step(ctx)
		wait := m.syncFreq
		if next, ok := m.NextDeadline(); ok {
			wait = next.Sub(m.clk.Now())
		}
		if wait <= 0 {
			continue
		}
		t := m.clk.Timer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if m.tempRoot {
				// The stand-in root of a simulated node goes with it.
				_ = os.RemoveAll(m.node.RootDir)
			}
			return ctx.Err()
		case <-m.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// Pods is every pod the agent knows with its latest status, ordered by namespace and name.
func (m *Manager) Pods() []corev1.Pod { return m.published.Pods() }

// SharedPods is Pods without the copies: shared with the pod workers and every other reader, never
// to be modified; a pod unchanged since the last publish is the same pointer (status.Cache.Shared).
func (m *Manager) SharedPods() []*corev1.Pod { return m.published.Shared() }

// PodsVersion changes whenever what Pods returns may have changed, so a reader polling after every
// Step (the simulator, a relist a second) copies and compares only when it has to.
func (m *Manager) PodsVersion() uint64 { return m.published.Version() }

// Changed returns a channel closed when what Pods returns next changes.
func (m *Manager) Changed() <-chan struct{} { return m.published.Changed() }

// Stopped tells whether the pod uid has no containers or sandbox of the agent's left: it was
// never admitted, or its removal finished tearing it down. A pod whose update waits in the inbox
// is not yet judged: a restarted agent's removal of a pod it never held may find it running.
func (m *Manager) Stopped(uid types.UID) bool {
	return m.published.Stopped(uid) && !m.inbox.holds(func(u sources.Update) bool { return u.Pod.UID == uid })
}

// SetObjects gives the workers the API's configmaps and secrets; call it before Run. Without it,
// pods that read them are refused by name.
func (m *Manager) SetObjects(o volumes.Objects) {
	m.objects = o
	m.volumes.SetObjects(o)
	m.images.SetSecrets(o)
}

// SetTokens gives the workers the API's TokenRequest; call it before Run. Without it, pods with
// serviceAccountToken projections are refused by name.
func (m *Manager) SetTokens(t volumes.Tokens) { m.volumes.SetTokens(t) }

// SetServiceAccounts gives the credential provider plugins the API's service accounts and
// TokenRequest, for those in service account token mode; call it before Run.
func (m *Manager) SetServiceAccounts(sa credentialprovider.ServiceAccounts) {
	if p, ok := m.node.Credentials.(*credentialprovider.Providers); ok {
		p.SetServiceAccounts(sa)
	}
}

// VolumeDir is where the pod's volume lives on the node, for the volume stats calculator.
func (m *Manager) VolumeDir(pod *corev1.Pod, v *corev1.Volume) string {
	return m.volumes.VolumeDir(pod, v)
}
