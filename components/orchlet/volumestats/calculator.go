package volumestats

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"orch.io/orch/components/periodic"
)

// Pods are the pods whose volumes are measured; *pods.Manager is one.
type Pods interface {
	// ActivePods are the pods that run or may run.
	ActivePods() []*corev1.Pod
	// VolumeDir is where the pod's volume lives on the node.
	VolumeDir(pod *corev1.Pod, v *corev1.Volume) string
}

// Options are what the calculator needs.
type Options struct {
	Clock clock.Clock
	// Period is --volume-stats-agg-period; zero or negative disables the calculator.
	Period time.Duration
	Pods   Pods
	// Measure is DiskUsage on a node, ApparentUsage (and what a simulated runtime wrote) in a
	// simulator.
	Measure func(path string) (Usage, error)
	Logger  klog.Logger
}

// Volume is one volume's usage as last measured.
type Volume struct {
	Name string
	Usage
}

// Calculator is the kubelet's volume stats calculator and the fsResourceAnalyzer caching its
// results: every Period it measures each active pod's local ephemeral volumes and keeps the
// figures until the next measurement. Run drives it, or a simulator calls Step when NextDeadline
// is due.
type Calculator struct {
	o Options

	mu    sync.Mutex // guards everything below
	next  time.Time
	stats map[types.UID][]Volume
}

var errOptions = errors.New("volumestats: Clock, Pods and Measure are required")

// New returns a calculator whose first Step measures at once, or, with a Period of zero or less,
// one that never measures (Kubernetes' "Volume stats collection disabled").
func New(o Options) (*Calculator, error) {
	if o.Clock == nil || o.Pods == nil || o.Measure == nil {
		return nil, errOptions
	}
	if o.Logger.GetSink() == nil {
		o.Logger = klog.Background()
	}
	if o.Period <= 0 {
		o.Logger.Info("Volume stats collection disabled", "volumeStatsAggPeriod", o.Period)
	}
	return &Calculator{o: o, next: o.Clock.Now(), stats: map[types.UID][]Volume{}}, nil
}

// Enabled is false when --volume-stats-agg-period disables the calculator.
func (c *Calculator) Enabled() bool { return c.o.Period > 0 }

// NextDeadline is when the next measurement is due; none when disabled.
func (c *Calculator) NextDeadline() (time.Time, bool) {
	if !c.Enabled() {
		return time.Time{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.next, true
}

// Idle is true when no measurement is due now.
func (c *Calculator) Idle() bool {
	next, ok := c.NextDeadline()
	return !ok || c.o.Clock.Now().Before(next)
}

// Run measures every Period until ctx ends; disabled, it only waits for ctx.
func (c *Calculator) Run(ctx context.Context) error {
	if !c.Enabled() {
		<-ctx.Done()
		return ctx.Err()
	}
	return periodic.Run(ctx, c.o.Clock, func(ctx context.Context) { c.Step(ctx) }, func() time.Time { next, _ := c.NextDeadline(); return next })
}

// Step measures if due and reports whether it did.
func (c *Calculator) Step(context.Context) bool {
	if c.Idle() {
		return false
	}
	stats := map[types.UID][]Volume{}
	for _, pod := range c.o.Pods.ActivePods() {
		var vols []Volume
		for i := range pod.Spec.Volumes {
			v := &pod.Spec.Volumes[i]
			if !IsLocalEphemeralVolume(v) {
				continue
			}
			dir := c.o.Pods.VolumeDir(pod, v)
			u, err := c.o.Measure(dir)
			if err != nil {
				// As calcAndStoreStats: a volume not measured is left out, not reported empty.
				c.o.Logger.V(4).Info("Failed to calculate volume metrics", "pod", klog.KObj(pod), "volumeName", v.Name, "path", dir, "err", err)
				continue
			}
			vols = append(vols, Volume{Name: v.Name, Usage: u})
		}
		stats[pod.UID] = vols
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats, c.next = stats, c.o.Clock.Now().Add(c.o.Period)
	return true
}

// Volumes are the pod's local ephemeral volumes as last measured; none before the first
// measurement, when disabled, or for a pod not active then.
func (c *Calculator) Volumes(uid types.UID) []Volume {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stats[uid]
}

// IsLocalEphemeralVolume is Kubernetes' (volume/util): a volume on the node's disk that lives as
// long as its pod, counted in the pod's ephemeral-storage use: emptyDir but memory-backed,
// configMap, downwardAPI and gitRepo.
func IsLocalEphemeralVolume(v *corev1.Volume) bool {
	return v.GitRepo != nil || (v.EmptyDir != nil && v.EmptyDir.Medium != corev1.StorageMediumMemory) ||
		v.ConfigMap != nil || v.DownwardAPI != nil
}
