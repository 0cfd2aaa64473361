package agent

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/eviction"
	"orch.io/orch/components/orchlet/pods"
	"orch.io/orch/components/orchlet/pods/podsync"
	"orch.io/orch/components/orchlet/volumestats"
)

// newEviction starts the eviction manager on the pod workers when the agent has an observer.
func (a *Agent) newEviction(cfg *v1beta1.OrchletConfiguration, d Deps) error {
	if d.Observer == nil {
		return nil
	}
	ec, err := eviction.ConfigFrom(cfg)
	if err != nil {
		return err
	}
	measure := d.DiskUsage
	if measure == nil {
		measure = volumestats.DiskUsage
	}
	a.VolumeStats, err = volumestats.New(volumestats.Options{Clock: d.Clock, Period: cfg.VolumeStatsAggPeriod.Duration, Pods: a.Pods, Measure: measure, Logger: d.Logger})
	if err != nil {
		return err
	}
	logsDir := d.PodLogsDir
	if logsDir == "" {
		logsDir = pods.DefaultPodLogsDir
	}
	observer := ephemeralObserver{Observer: d.Observer, pods: a.Pods, volumes: a.VolumeStats, logsDir: logsDir, measure: measure, logDirs: map[types.UID]*podLogDirs{}}
	reclaimer := d.Reclaimer
	if reclaimer == nil {
		reclaimer = gcReclaimer{a}
	}
	a.Eviction, err = eviction.NewManager(eviction.Options{
		Clock: d.Clock, Config: ec, Observer: observer, Reclaimer: reclaimer, Pods: a.Pods,
		Recorder: a.Events, NodeName: d.NodeName, Logger: d.Logger, Memcg: d.Memcg, MemcgUnavailable: d.MemcgUnavailable,
	})
	if err != nil {
		return fmt.Errorf("eviction manager: %w", err)
	}
	return nil
}

// admit is the eviction manager's admission (every pod without one), then the CPU manager's
// own, then the topology manager's (which allocates its providers' resources), or the memory
// manager's when no topology manager aligns it, run before the pod workers' own handlers.
func (a *Agent) admit(pod *corev1.Pod) (bool, string, string) {
	if a.Eviction != nil {
		if ok, reason, msg := a.Eviction.Admit(pod); !ok {
			return ok, reason, msg
		}
	}
	if a.CPUs != nil {
		if ok, reason, msg := a.CPUs.Admit(pod); !ok {
			return ok, reason, msg
		}
	}
	if a.Topology != nil {
		return a.Topology.Admit(pod)
	}
	if a.Memory.Static() {
		return a.Memory.Admit(pod)
	}
	return true, "", ""
}

// Pressure are the node's pressure conditions (none without an eviction manager).
func (a *Agent) Pressure() []corev1.NodeConditionType {
	if a.Eviction == nil {
		return nil
	}
	return a.Eviction.Conditions()
}

// gcReclaimer is node-level reclaim through the agent's garbage collectors, which EnableGC makes
// after the eviction manager (and before Run, or a simulator's first step).
type gcReclaimer struct{ a *Agent }

var errNoGC = errors.New("the agent has no garbage collector")

func (r gcReclaimer) DeleteAllUnusedContainers(ctx context.Context) error {
	if r.a.GC == nil {
		return errNoGC
	}
	return r.a.GC.Containers.DeleteAllUnusedContainers(ctx)
}

func (r gcReclaimer) DeleteUnusedImages(ctx context.Context) error {
	if r.a.GC == nil {
		return errNoGC
	}
	_, err := r.a.GC.Images.DeleteUnusedImages(ctx)
	return err
}

// ephemeralObserver adds to each pod's stats what the runtime does not report, as the kubelet's
// stats provider does: its containers' log directories, measured at each observation
// (getPodContainerLogStats), and its local ephemeral volumes as the volume stats calculator last
// measured them (none while --volume-stats-agg-period disables it).
type ephemeralObserver struct {
	eviction.Observer
	pods    activePods
	volumes *volumestats.Calculator
	logsDir string
	measure func(string) (volumestats.Usage, error)
	// logDirs are the active pods' container log directories, each joined once: the paths are a
	// pod's for its life, and joining (and cleaning) them anew at every round for every container
	// was a tenth of the round's CPU. Observe, the eviction manager's, runs one round at a time.
	logDirs map[types.UID]*podLogDirs
}

// activePods are the pod workers' pods that run or may run.
type activePods interface{ ActivePods() []*corev1.Pod }

// podLogDirs are one pod's log directory and its containers' within it, by container name.
type podLogDirs struct {
	dir        string
	containers map[string]string
}

// containerLogDir is the directory of the pod's container's logs, joined at its first asking.
func (o ephemeralObserver) containerLogDir(pod *corev1.Pod, container string) string {
	d := o.logDirs[pod.UID]
	if d == nil {
		d = &podLogDirs{dir: podsync.LogDirectory(o.logsDir, pod), containers: map[string]string{}}
		o.logDirs[pod.UID] = d
	}
	path, ok := d.containers[container]
	if !ok {
		path = filepath.Join(d.dir, container)
		d.containers[container] = path
	}
	return path
}

func (o ephemeralObserver) Observe(ctx context.Context) (eviction.Stats, error) {
	s, err := o.Observer.Observe(ctx)
	if err != nil {
		return s, err
	}
	pods := o.pods.ActivePods()
	active := make(map[types.UID]*corev1.Pod, len(pods))
	for _, p := range pods {
		active[p.UID] = p
	}
	for i := range s.Pods {
		ps := &s.Pods[i]
		if pod := active[ps.UID]; pod != nil {
			for j := range ps.Containers {
				c := &ps.Containers[j]
				// A container that has not logged yet has no directory: no usage.
				if u, err := o.measure(o.containerLogDir(pod, c.Name)); err == nil {
					c.LogsBytes, c.LogsInodes = u.Bytes, u.Inodes
				}
			}
		}
		for _, v := range o.volumes.Volumes(ps.UID) {
			ps.Volumes = append(ps.Volumes, eviction.VolumeStats{Name: v.Name, UsedBytes: v.Bytes, Inodes: v.Inodes})
		}
	}
	for uid := range o.logDirs {
		if active[uid] == nil {
			delete(o.logDirs, uid)
		}
	}
	return s, nil
}
