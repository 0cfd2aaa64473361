package pods

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"orch.io/orch/components/orchlet/events"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/featuregates"
	"orch.io/orch/components/orchlet/pods/calls"
	"orch.io/orch/components/orchlet/pods/dns"
	"orch.io/orch/components/orchlet/pods/images"
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
	CPUs CPUAssigner
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

// Manager keeps the desired pods and makes the runtime match them.
type Manager struct {
	clk      clock.Clock
	rt       cri.RuntimeService
	img      cri.ImageManagerService
	rec      Recorder
	log      klog.Logger
	prober   *prober.Prober
	timeout  time.Duration
	syncFreq time.Duration
	relist   time.Duration
	capacity int
	logsDir  string
	cpus     CPUAssigner
	dns      *dns.Configurer
	sysctls  *security.SysctlAllowlist
	security security.Host
	qos      *qos.Manager
	node     Node
	cores    int  // the node's CPUs, the downward API's CPU limit when a container sets none
	tempRoot bool // RootDir was made by New for a simulated node, and goes when Run ends
	images   *images.Puller

	inbox     handoff[sources.Update]
	evictions handoff[evictRequest]
	admit     AdmitFunc
	objects   volumes.Objects // nil: no API server to read configmaps and secrets from
	volumes   *volumes.Manager
	wake      chan struct{}

	sizeLimitsEnforced bool // no SizeLimitNotEnforced warning

	calls *calls.Tracker

	statusGen status.Generator
	published *status.Cache

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
	touched  map[types.UID]bool // pods whose spec or status changed since the last publish
	started  bool
	relister *relist.Relister
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
	gates, err := featuregates.New(c.FeatureGates)
	if err != nil {
		return nil, fmt.Errorf("pods: %w", err)
	}
	q, err := qos.New(c, qos.Host{CgroupV2: o.Node.CgroupV2, MemoryCapacity: o.Node.MemoryCapacity, HugePageSizes: o.Node.HugePageSizes, Cgroups: o.Node.Cgroups})
	if err != nil {
		return nil, err
	}
	m := &Manager{
		clk: o.Clock, rt: o.Runtime, img: o.Images, rec: o.Recorder, log: o.Logger,
		sizeLimitsEnforced: o.SizeLimitsEnforced,
		timeout:            c.RuntimeRequestTimeout.Duration,
		syncFreq:           c.SyncFrequency.Duration,
		relist:             DefaultRelistPeriod,
		capacity:           Capacity(c.MaxPods, c.PodsPerCore, o.Cores),
		logsDir:            o.PodLogsDir,
		cpus:               o.CPUs,
		admit:              o.Admit,
		sysctls:            sysctls,
		published:          status.NewCache(),
		qos:                q,
		node:               o.Node,
		cores:              o.Cores,
		workers:            max(o.Workers, 1),
		busy:               map[types.UID]bool{},
		done:               make(chan types.UID, max(o.Workers, 1)),
		wake:               make(chan struct{}, 1),
		pods:               map[types.UID]*podState{},
		queue:              map[itemKey]time.Time{},
		touched:            map[types.UID]bool{},
		calls:              calls.New(o.Clock, c.RuntimeRequestTimeout.Duration),
	}
	if o.RelistPeriod > 0 {
		m.relist = o.RelistPeriod
	}
	if m.logsDir == "" {
		m.logsDir = DefaultPodLogsDir
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
	m.volumes = volumes.New(volumes.Options{
		Clock: o.Clock, Recorder: o.Recorder, Logger: m.log, ImageVolumes: gates.Enabled(featuregates.ImageVolume), ClusterDomain: c.ClusterDomain,
		ReadFile: func(name string) ([]byte, error) { return readNodeFile(o.FS, name) },
		Node: volumes.Node{Name: m.node.Name, HostIPs: m.node.HostIPs, Cores: o.Cores, MemoryCapacity: m.node.MemoryCapacity,
			RootDir: m.node.RootDir, SELinux: m.node.SELinux, Tmpfs: m.node.Tmpfs, SubPaths: m.node.SubPaths},
	})
	m.security = security.Host{SeccompDefault: m.node.SeccompDefault, RootDir: m.node.RootDir, ThermalThrottlePaths: m.node.ThermalThrottlePaths}
	m.relister = relist.New(o.Runtime, m.calls, m.log, o.SourcesReady)
	m.statusGen = status.Generator{
		ReadyToStart: gates.Enabled(featuregates.PodReadyToStartContainersCondition),
		ReadFile:     func(name string) ([]byte, error) { return readNodeFile(o.FS, name) },
		ContainerID:  m.relister.ContainerID,
	}
	m.prober = prober.New(prober.Options{Clock: o.Clock, Calls: m.calls, Runtime: o.Runtime, Recorder: o.Recorder, HTTP: o.HTTP, Dial: o.Dial, Version: o.Version})
	var resolvData []byte
	if c.ResolverConfig != "" {
		// The kubelet fails each sandbox when the file cannot be read; a node without it still
		// runs pods here, with the runtime's default resolver.
		if resolvData, err = readNodeFile(o.FS, c.ResolverConfig); err != nil {
			m.log.Error(err, "Cannot read the resolver configuration, pods get none of it", "resolvConf", c.ResolverConfig)
		}
	}
	m.dns = dns.New(o.Recorder, c.ClusterDNS, c.ClusterDomain, c.ResolverConfig, resolvData)
	m.images = images.New(images.Options{Clock: o.Clock, Calls: m.calls, Images: o.Images, Recorder: o.Recorder, Logger: m.log,
		Serialize: c.SerializeImagePulls, QPS: c.RegistryPullQPS, Burst: c.RegistryBurst, Wake: m.poke})
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
	var next time.Time
	found := false
	for _, due := range m.queue {
		if !found || due.Before(next) {
			next, found = due, true
		}
	}
	return next, found
}

// Idle is true when no update waits to be applied and nothing in the queue is due now.
func (m *Manager) Idle() bool {
	if m.inbox.len() > 0 || m.images.Ended() || m.evictions.len() > 0 {
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
	for _, due := range m.queue {
		if !due.After(now) {
			return false
		}
	}
	return true
}

// Calls reports the Manager's calls in progress: Step's, and image pulls running in the
// background.
func (m *Manager) Calls() calls.State { return m.calls.State() }

// CallsChanged returns a channel closed when a call next starts or ends.
func (m *Manager) CallsChanged() <-chan struct{} { return m.calls.Changed() }

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

// PodsVersion changes whenever what Pods returns may have changed, so a reader polling after every
// Step (the simulator, a relist a second) copies and compares only when it has to.
func (m *Manager) PodsVersion() uint64 { return m.published.Version() }

// Changed returns a channel closed when what Pods returns next changes.
func (m *Manager) Changed() <-chan struct{} { return m.published.Changed() }

// Stopped tells whether the pod uid has no containers or sandbox of the agent's left: it was
// never admitted, or its removal finished tearing it down.
func (m *Manager) Stopped(uid types.UID) bool { return m.published.Stopped(uid) }

// publishTouched copies again only the pods touched since the last publish: an item that only
// relisted and found nothing new publishes nothing.
func (m *Manager) publishTouched() {
	m.shared.Lock()
	fresh := false
	for uid := range m.touched {
		if m.busy[uid] {
			continue // a worker is changing its status: published once it is done
		}
		if p := m.pods[uid]; p != nil {
			p.snap = nil
		}
		delete(m.touched, uid)
		fresh = true
	}
	m.shared.Unlock()
	if !fresh {
		return
	}
	out := make([]*corev1.Pod, 0, len(m.pods))
	stopping := map[types.UID]bool{}
	for uid, p := range m.pods {
		if p.removed {
			stopping[uid] = true
			continue
		}
		if p.snap == nil && m.busy[uid] {
			continue // never published yet, and its worker is changing it
		}
		if p.snap == nil {
			p.snap = p.pod.DeepCopy()
			p.status.DeepCopyInto(&p.snap.Status)
		}
		out = append(out, p.snap)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	m.published.Publish(out, stopping, func(uid types.UID) (bool, bool) {
		p := m.pods[uid]
		return p != nil, p != nil && p.evicted != nil
	})
}

// applyUpdates admits new pods in the order the sources sent them: a pod beyond the capacity is
// rejected for good, as Kubernetes' kubelet rejects it, and later removals do not admit it.
func (m *Manager) applyUpdates() {
	us := m.inbox.take()
	now := m.clk.Now()
	for i, u := range us {
		if m.busy[u.Pod.UID] {
			// As the kubelet's pod workers, an update waits for the pod's sync in progress;
			// those after it wait too, so that they apply in order.
			m.inbox.putBack(us[i:]...)
			return
		}
		m.touch(u.Pod.UID)
		p := m.pods[u.Pod.UID]
		switch u.Op {
		case sources.OpRemove:
			if p == nil || p.removed {
				continue
			}
			if p.rejected != "" {
				m.shared.Lock()
				delete(m.pods, u.Pod.UID)
				m.shared.Unlock()
				continue
			}
			if p.evicted == nil {
				m.admitted--
			}
			p.removed = true
			// A deletion through the API may shorten the grace period the spec gives.
			p.pod.DeletionGracePeriodSeconds = u.Pod.DeletionGracePeriodSeconds
			m.enqueue(p.syncKey(), now)
		default:
			if p != nil && !p.removed {
				p.pod = u.Pod.DeepCopy()
				if p.evicted != nil {
					continue // an evicted pod stays Failed whatever its spec becomes
				}
				if p.rejected == "" {
					m.volumes.Updated(p.volumes())
				}
				m.enqueue(p.syncKey(), now)
				continue
			}
			if phase := u.Pod.Status.Phase; phase == corev1.PodFailed || phase == corev1.PodSucceeded {
				// The API shows it finished (this agent evicted or completed it before a restart):
				// it is not run again, as the kubelet's pod workers take such a pod as terminated.
				// What is left of it in the runtime is the garbage collectors'.
				m.log.V(2).Info("Pod is terminal in the API; not starting it", "pod", klog.KObj(u.Pod), "phase", phase)
				continue
			}
			p = newPodState(u.Pod.DeepCopy(), now)
			m.shared.Lock()
			m.pods[u.Pod.UID] = p
			m.shared.Unlock()
			if !m.admitEviction(p) || !m.admitSysctls(p) || !m.admitSpec(p) {
				continue
			}
			if m.admitted >= m.capacity {
				p.reject(fmt.Sprintf("Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d", m.admitted, m.capacity))
				m.rec.Eventf(events.PodReference(p.pod), corev1.EventTypeWarning, ReasonOutOfPods, "Admit", "%s", p.rejected)
				m.log.Info("Pod rejected", "pod", klog.KObj(p.pod), "reason", ReasonOutOfPods, "message", p.rejected)
				continue
			}
			m.admitted++
			m.enqueue(p.syncKey(), now)
		}
	}
}

func (m *Manager) do(ctx context.Context, k itemKey) {
	now := m.clk.Now()
	switch k.kind {
	case kindRelist:
		m.relistRuntime(ctx)
		m.enqueue(itemKey{kind: kindRelist}, now.Add(m.relist))
	case kindResync:
		for _, p := range m.pods {
			if p.rejected == "" && p.evicted == nil {
				m.enqueue(p.syncKey(), now)
			}
		}
		m.enqueue(itemKey{kind: kindResync}, now.Add(m.syncFreq))
	case kindSync:
		p := m.pod(k.uid)
		if p == nil {
			return
		}
		m.sync(ctx, p)
	case kindProbe:
		p := m.pod(k.uid)
		if p == nil || p.removed {
			return
		}
		m.probe(ctx, p, k.container, k.probe)
	}
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

// VolumeDir is where the pod's volume lives on the node, for the volume stats calculator.
func (m *Manager) VolumeDir(pod *corev1.Pod, v *corev1.Volume) string {
	return m.volumes.VolumeDir(pod, v)
}

// applyPulls hands the background pulls that ended to their pods' next syncs, queued now.
func (m *Manager) applyPulls() {
	now := m.clk.Now()
	for _, uid := range m.images.Settle(func(uid types.UID) bool { p := m.pods[uid]; return p != nil && !p.removed }) {
		m.enqueue(m.pods[uid].syncKey(), now)
	}
}

// relistRuntime relists the runtime: orphans are torn down, and the pods whose objects changed are
// synced, at once.
func (m *Manager) relistRuntime(ctx context.Context) {
	r := m.relister.Relist(ctx, func(uid types.UID) bool { return m.pods[uid] != nil })
	now := m.clk.Now()
	for _, o := range r.Orphans {
		p := newPodState(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name, UID: o.UID}}, now)
		p.removed = true
		m.shared.Lock()
		m.pods[o.UID] = p
		m.shared.Unlock()
	}
	for _, uid := range r.Changed {
		m.enqueue(m.pods[uid].syncKey(), now)
	}
}
