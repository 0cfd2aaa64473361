package podsync

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/pods/calls"
	"orch.io/orch/components/orchlet/pods/dns"
	"orch.io/orch/components/orchlet/pods/images"
	"orch.io/orch/components/orchlet/pods/prober"
	"orch.io/orch/components/orchlet/pods/qos"
	"orch.io/orch/components/orchlet/pods/security"
	"orch.io/orch/components/orchlet/pods/status"
	"orch.io/orch/components/orchlet/pods/volumes"
)

// Queue is the pod workers' queue as a sync sees it: where it asks for its pod's next sync or a
// probe, and says the pod's status changed.
type Queue interface {
	// Sync makes the pod's sync due at t, or keeps it due earlier.
	Sync(pod *corev1.Pod, t time.Time)
	// Probe makes a probe of the pod's container due at t, or keeps it due earlier; Unprobe drops it.
	Probe(pod *corev1.Pod, container string, probe prober.Type, t time.Time)
	Unprobe(pod *corev1.Pod, container string, probe prober.Type)
	// Touch marks the pod for the next publish of the pods' statuses.
	Touch(uid types.UID)
}

// Listed is what the relist's pod cache holds of a pod, as the kubelet's pod workers read a pod's
// status from the PLEG's cache: its sandboxes and containers, in the runtime's order. A sync
// reads it and never changes it.
type Listed struct {
	Sandboxes  []*runtimeapi.PodSandbox
	Containers []*runtimeapi.Container
}

// Statuses keeps the container statuses the syncs read, for the syncs after them while the
// container is listed in the same state; *relist.Relister is one.
type Statuses interface {
	// Status is the status of c read since it was listed in its state; nil when none was.
	Status(c *runtimeapi.Container) *runtimeapi.ContainerStatus
	KeepStatus(st *runtimeapi.ContainerStatus)
}

// Recorder records events; *events.Recorder is one.
type Recorder interface {
	Eventf(regarding *corev1.ObjectReference, eventType, reason, action, noteFormat string, args ...any)
}

// Options are what a Syncer needs: the runtime, the pod runtime's other pieces, and the pod
// workers' queue.
type Options struct {
	Clock    clock.Clock
	Calls    *calls.Tracker
	Runtime  cri.RuntimeService
	Recorder Recorder
	Logger   klog.Logger
	Queue    Queue
	// LivePods are the admitted pods not being removed, whose requests size the QoS cgroups.
	LivePods func() []*corev1.Pod

	Images   *images.Puller
	Volumes  *volumes.Manager
	Prober   *prober.Prober
	QoS      *qos.Manager
	DNS      *dns.Configurer
	Security security.Host
	Status   status.Generator
	// CPUs, when set, gives each container its cpuset (--cpu-manager-policy).
	CPUs CPUAssigner
	// Memory, when set, gives each container its cpuset.mems (--memory-manager-policy).
	Memory MemoryAssigner
	// LogsDir holds each pod's log directory.
	LogsDir string
	// Statuses is the relist's cache of the container statuses read.
	Statuses Statuses
}

// Syncer makes the runtime match one pod at a time; the pod workers call it for a pod from that
// pod's worker only.
type Syncer struct {
	clk      clock.Clock
	calls    *calls.Tracker
	timeout  time.Duration
	rt       cri.RuntimeService
	rec      Recorder
	log      klog.Logger
	queue    Queue
	livePods func() []*corev1.Pod

	images    *images.Puller
	volumes   *volumes.Manager
	prober    *prober.Prober
	qos       *qos.Manager
	dns       *dns.Configurer
	security  security.Host
	statusGen status.Generator
	cpus      CPUAssigner
	memory    MemoryAssigner
	logsDir   string
	statuses  Statuses
}

// New is a syncer with o's pieces.
func New(o Options) *Syncer {
	return &Syncer{
		clk: o.Clock, calls: o.Calls, timeout: o.Calls.Timeout(), rt: o.Runtime, rec: o.Recorder, log: o.Logger,
		queue: o.Queue, livePods: o.LivePods, images: o.Images, volumes: o.Volumes, prober: o.Prober, qos: o.QoS,
		dns: o.DNS, security: o.Security, statusGen: o.Status, cpus: o.CPUs, memory: o.Memory, logsDir: o.LogsDir,
		statuses: o.Statuses,
	}
}

// Sync makes the runtime match the pod: it tears down a pod that was removed, kills an evicted
// one, and otherwise refreshes its volumes and brings up its sandbox and containers. It decides
// on listed, what the relist's pod cache holds of the pod, and lists the runtime itself when
// that is nil, or when it tears down or kills the pod. An error is the runtime's or the host's:
// the pod workers retry with back-off.
func (s *Syncer) Sync(ctx context.Context, p *PodState, listed *Listed) error {
	switch {
	case p.Removed:
		return s.teardown(ctx, p)
	case p.Evicted != nil:
		return s.killEvicted(ctx, p)
	}
	s.volumes.Refresh(ctx, p.volumes())
	return s.syncPod(ctx, p, listed)
}

// Evict fails the pod with the eviction's reason and message and drops its probes; its next sync
// kills it within grace seconds (at once if negative) and it never runs again.
func (s *Syncer) Evict(p *PodState, grace int64, reason, message string) {
	p.Evicted = &Eviction{Grace: max(grace, 0), Reason: reason, Message: message}
	p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, reason, message
	for name := range p.ctrs {
		for _, t := range prober.Types {
			s.queue.Unprobe(p.Pod, name, t)
		}
	}
}

// CleanedUp says the evicted pod's containers and sandboxes are stopped.
func (p *PodState) CleanedUp() bool { return p.Evicted != nil && p.Evicted.done }

// Updated takes a running pod's new spec: its downward API volumes are rewritten as its labels or
// annotations say.
func (s *Syncer) Updated(p *PodState) {
	if p.Rejected == "" {
		s.volumes.Updated(p.volumes())
	}
}
