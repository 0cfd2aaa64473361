package agent

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/containergc"
	"orch.io/orch/components/orchlet/imagegc"
)

// GC is the node's garbage collectors; the eviction manager reclaims through them
// (DeleteUnusedImages, DeleteAllUnusedContainers) before it evicts a pod.
type GC struct {
	Images     *imagegc.Manager
	Containers *containergc.Manager
}

// GCSettings are what the collectors take beyond the configuration file: command-line options and
// gates, read by the caller.
type GCSettings struct {
	// SandboxImage is --pod-infra-container-image.
	SandboxImage string
	// MinContainerAge, MaxDeadPerContainer and MaxDead are --minimum-container-ttl-duration,
	// --maximum-dead-containers-per-container and --maximum-dead-containers.
	MinContainerAge              time.Duration
	MaxDeadPerContainer, MaxDead int32
	// MaxImageAge applies imageMaximumGCAge: the ImageMaximumGCAge gate is on.
	MaxImageAge bool
	// ImageVolumes counts images mounted as volumes as in use: the ImageVolume gate is on.
	ImageVolumes bool
	// FsInfo sizes the image filesystem: statfs on a node, the fake runtime in a simulation.
	FsInfo imagegc.FsInfo
	// PodLogsDir and SourcesReady are the agent's (Deps); the collector also waits for the
	// agent's own sources to have been read once.
	PodLogsDir   string
	SourcesReady func() bool
	// Metrics, when set, gets the collectors' metrics.
	Metrics prometheus.Registerer
}

// EnableGC makes the agent's garbage collectors; Run runs them, a simulator steps them itself.
func (a *Agent) EnableGC(cfg *v1beta1.OrchletConfiguration, s GCSettings) error {
	p := imagegc.Policy{
		HighThresholdPercent: int(cfg.ImageGCHighThresholdPercent),
		LowThresholdPercent:  int(cfg.ImageGCLowThresholdPercent),
		MinAge:               cfg.ImageMinimumGCAge.Duration,
	}
	if s.MaxImageAge {
		p.MaxAge = cfg.ImageMaximumGCAge.Duration
	}
	images, err := imagegc.New(imagegc.Options{
		Clock: a.clk, Runtime: a.runtime, Images: a.images, FsInfo: s.FsInfo, Recorder: a.Events,
		NodeName: a.node, SandboxImage: s.SandboxImage, Policy: p, Logger: a.logger, Metrics: s.Metrics,
		ImageVolumes: s.ImageVolumes,
	})
	if err != nil {
		return fmt.Errorf("image garbage collection: %w", err)
	}
	// No pod is judged gone before every source has sent its pods: a restarted agent's pods
	// would otherwise lose their dead instances and logs before the sources name them again.
	ready := func() bool { return a.Sources.Polled() && (s.SourcesReady == nil || s.SourcesReady()) }
	containers, err := containergc.New(containergc.Options{
		Clock: a.clk, Runtime: a.runtime, Images: a.images, Pods: podState{a}, Recorder: a.Events, NodeName: a.node,
		SourcesReady: ready, PodLogsDir: s.PodLogsDir, Logger: a.logger,
		Policy: containergc.Policy{MinAge: s.MinContainerAge, MaxPerPodContainer: int(s.MaxDeadPerContainer), MaxContainers: int(s.MaxDead)},
	})
	if err != nil {
		return fmt.Errorf("container garbage collection: %w", err)
	}
	a.GC = &GC{Images: images, Containers: containers}
	return nil
}

// podState: a pod's leftovers are garbage once the pod workers have let it go.
type podState struct{ a *Agent }

// ShouldPodContentBeRemoved: a pod gone from the workers, or an evicted one once stopped, as the
// kubelet's ShouldPodContentBeRemoved says (eviction.PodIsEvicted): its writable layers are what
// node-level reclaim frees under disk pressure.
func (p podState) ShouldPodContentBeRemoved(uid types.UID) bool {
	return p.a.Pods.Stopped(uid) || p.a.Pods.CleanedUp(uid)
}
