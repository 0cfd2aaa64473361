package containergc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/events"
	"orch.io/orch/components/orchlet/pods"
	"orch.io/orch/components/orchlet/pods/labels"
	"orch.io/orch/components/periodic"
)

// Period is how often containers are collected: the kubelet's ContainerGCPeriod.
const Period = time.Minute

// ReasonContainerGCFailed is the event of a failed collection, as the kubelet names it.
const ReasonContainerGCFailed = "ContainerGCFailed"

// Policy is the kubelet's GCPolicy.
type Policy struct {
	// MinAge: a container created more recently is never removed (--minimum-container-ttl-duration).
	MinAge time.Duration
	// MaxPerPodContainer: dead instances kept per (pod, container name); negative keeps all
	// (--maximum-dead-containers-per-container).
	MaxPerPodContainer int
	// MaxContainers: dead containers kept on the node; negative keeps all (--maximum-dead-containers).
	MaxContainers int
}

// PodState tells whether a pod's runtime leftovers may go.
type PodState interface {
	// ShouldPodContentBeRemoved: the agent no longer has the pod (deleted and torn down, or never
	// known), so its containers, sandboxes and logs are garbage.
	ShouldPodContentBeRemoved(uid types.UID) bool
}

// Recorder records events; *events.Recorder is one.
type Recorder interface {
	Eventf(regarding *corev1.ObjectReference, eventType, reason, action, noteFormat string, args ...any)
}

// Options configure a Manager.
type Options struct {
	Clock   clock.Clock
	Runtime cri.RuntimeService
	// Images answers IsContainerFsSeparateFromImageFs.
	Images   cri.ImageManagerService
	Pods     PodState
	Recorder Recorder
	NodeName string
	// SourcesReady tells whether every pod source has sent its pods (nil: always); before, no pod
	// is judged gone.
	SourcesReady func() bool
	// PodLogsDir holds the pods' log directories; empty means pods.DefaultPodLogsDir.
	PodLogsDir string
	Policy     Policy
	Logger     klog.Logger
}

// Manager is the container garbage collector of one node.
type Manager struct {
	o    Options
	log  klog.Logger
	node *corev1.ObjectReference

	mu         sync.Mutex // one collection at a time; guards what follows
	next       time.Time
	prevFailed bool
}

// New checks the options and returns a collector whose first collection is due at once.
func New(o Options) (*Manager, error) {
	if o.Clock == nil || o.Runtime == nil || o.Images == nil || o.Pods == nil || o.Recorder == nil || o.NodeName == "" {
		return nil, errors.New("containergc: Clock, Runtime, Images, Pods, Recorder and NodeName are required")
	}
	if o.Policy.MinAge < 0 {
		// NewContainerGC's message.
		return nil, fmt.Errorf("containergc: invalid minimum garbage collection age: %v", o.Policy.MinAge)
	}
	if o.PodLogsDir == "" {
		o.PodLogsDir = pods.DefaultPodLogsDir
	}
	log := o.Logger
	if log.GetSink() == nil {
		log = klog.Background()
	}
	return &Manager{o: o, log: log, node: events.NodeReference(o.NodeName), next: o.Clock.Now()}, nil
}

// NextDeadline is when the next collection is due.
func (m *Manager) NextDeadline() (time.Time, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.next, true
}

// Idle reports that no collection is due now.
func (m *Manager) Idle() bool {
	t, _ := m.NextDeadline()
	return m.o.Clock.Now().Before(t)
}

// Step runs the collection if due, as the kubelet's StartGarbageCollection loop body: every
// failure is logged and a ContainerGCFailed event. The next is due Period after this one ends.
func (m *Manager) Step(ctx context.Context) {
	if m.Idle() {
		return
	}
	err := m.GarbageCollect(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next = m.o.Clock.Now().Add(Period)
	if err != nil {
		m.log.Error(err, "Container garbage collection failed")
		m.o.Recorder.Eventf(m.node, events.Warning, ReasonContainerGCFailed, "GarbageCollect", "%s", err.Error())
		m.prevFailed = true
		return
	}
	level := 4
	if m.prevFailed {
		level = 1
	}
	m.prevFailed = false
	m.log.V(level).Info("Container garbage collection succeeded")
}

// Run collects at once and then every Period until ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	return periodic.Run(ctx, m.o.Clock, m.Step, func() time.Time { next, _ := m.NextDeadline(); return next })
}

// GarbageCollect removes the dead containers the policy does not keep, the dead sandboxes, and the
// log directories of pods that are gone (kuberuntime's containerGC.GarbageCollect).
func (m *Manager) GarbageCollect(ctx context.Context) error {
	return m.collect(ctx, m.o.Policy)
}

// DeleteAllUnusedContainers is node-level reclaim for the eviction manager: the same collection
// (the kubelet's realContainerGC.DeleteAllUnusedContainers runs its policy too).
func (m *Manager) DeleteAllUnusedContainers(ctx context.Context) error {
	m.log.Info("Attempting to delete unused containers")
	return m.collect(ctx, m.o.Policy)
}

// IsContainerFsSeparateFromImageFs tells the eviction manager whether writable layers live on a
// filesystem of their own: the runtime's first container and image filesystems have different
// mountpoints (realContainerGC.IsContainerFsSeparateFromImageFs); false when it cannot tell.
func (m *Manager) IsContainerFsSeparateFromImageFs(ctx context.Context) bool {
	resp, err := m.o.Images.ImageFsInfo(ctx)
	if err != nil {
		return false
	}
	ctrs, imgs := resp.GetContainerFilesystems(), resp.GetImageFilesystems()
	if len(ctrs) == 0 || len(imgs) == 0 || ctrs[0].GetFsId() == nil || imgs[0].GetFsId() == nil {
		return false
	}
	return ctrs[0].GetFsId().GetMountpoint() != imgs[0].GetFsId().GetMountpoint()
}

func (m *Manager) collect(ctx context.Context, p Policy) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ready := m.o.SourcesReady == nil || m.o.SourcesReady()
	var errs []error
	if err := m.evictContainers(ctx, p, ready); err != nil {
		errs = append(errs, err)
	}
	sandboxes, err := m.evictSandboxes(ctx)
	if err != nil {
		errs = append(errs, err)
	}
	if err == nil && ready {
		if err := m.evictPodLogsDirectories(sandboxes); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// containerGCInfo is a dead container, as the kubelet's.
type containerGCInfo struct {
	id, name   string
	createTime time.Time
	unknown    bool
}

// evictUnit is the set the per-container cap applies to: one container name of one pod.
type evictUnit struct {
	uid  types.UID
	name string
}

type containersByEvictUnit map[evictUnit][]containerGCInfo

func (u containersByEvictUnit) numContainers() int {
	n := 0
	for _, cs := range u {
		n += len(cs)
	}
	return n
}

// keys is the units in a fixed order, so removals happen in the same order every run.
func (u containersByEvictUnit) keys() []evictUnit {
	keys := make([]evictUnit, 0, len(u))
	for k := range u {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].uid != keys[j].uid {
			return keys[i].uid < keys[j].uid
		}
		return keys[i].name < keys[j].name
	})
	return keys
}

// byCreated orders newest first, the id breaking ties.
func byCreated(cs []containerGCInfo) {
	sort.SliceStable(cs, func(i, j int) bool {
		if !cs[i].createTime.Equal(cs[j].createTime) {
			return cs[i].createTime.After(cs[j].createTime)
		}
		return cs[i].id > cs[j].id
	})
}

// agentContainers lists the runtime's containers the agent made (labelled with their pod's uid);
// the kubelet lists all of them, but a runtime shared with other tools keeps theirs here.
func (m *Manager) agentContainers(ctx context.Context) ([]*runtimeapi.Container, error) {
	all, err := m.o.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	out := all[:0]
	for _, c := range all {
		if c.GetLabels()[labels.PodUID] != "" {
			out = append(out, c)
		}
	}
	return out, nil
}

// evictableContainers groups the containers not running and created at least MinAge ago by unit
// (evictableContainers).
func (m *Manager) evictableContainers(ctx context.Context, minAge time.Duration) (containersByEvictUnit, error) {
	ctrs, err := m.agentContainers(ctx)
	if err != nil {
		return nil, err
	}
	units := containersByEvictUnit{}
	newestGCTime := m.o.Clock.Now().Add(-minAge)
	for _, c := range ctrs {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		created := time.Unix(0, c.CreatedAt)
		if newestGCTime.Before(created) {
			continue
		}
		info := containerGCInfo{id: c.Id, name: c.GetMetadata().GetName(), createTime: created,
			unknown: c.State == runtimeapi.ContainerState_CONTAINER_UNKNOWN}
		key := evictUnit{uid: types.UID(c.Labels[labels.PodUID]), name: info.name}
		units[key] = append(units[key], info)
	}
	return units, nil
}

// evictContainers removes every dead container of pods that are gone (once all sources are ready),
// then the oldest beyond MaxPerPodContainer per unit, then, over MaxContainers, an equal share
// per unit (at least one) and finally the oldest on the node (evictContainers).
func (m *Manager) evictContainers(ctx context.Context, p Policy, allSourcesReady bool) error {
	units, err := m.evictableContainers(ctx, p.MinAge)
	if err != nil {
		return err
	}
	if allSourcesReady {
		for _, key := range units.keys() {
			if m.o.Pods.ShouldPodContentBeRemoved(key.uid) {
				m.removeOldestN(ctx, units[key], len(units[key]))
				delete(units, key)
			}
		}
	}
	if p.MaxPerPodContainer >= 0 {
		m.enforceMaxContainersPerEvictUnit(ctx, units, p.MaxPerPodContainer)
	}
	if p.MaxContainers >= 0 && units.numContainers() > p.MaxContainers {
		perUnit := p.MaxContainers / len(units)
		if perUnit < 1 {
			perUnit = 1
		}
		m.enforceMaxContainersPerEvictUnit(ctx, units, perUnit)
		if n := units.numContainers(); n > p.MaxContainers {
			var flat []containerGCInfo
			for _, key := range units.keys() {
				flat = append(flat, units[key]...)
			}
			byCreated(flat)
			m.removeOldestN(ctx, flat, n-p.MaxContainers)
		}
	}
	return nil
}

// enforceMaxContainersPerEvictUnit leaves at most max containers in each unit.
func (m *Manager) enforceMaxContainersPerEvictUnit(ctx context.Context, units containersByEvictUnit, max int) {
	for _, key := range units.keys() {
		if toRemove := len(units[key]) - max; toRemove > 0 {
			units[key] = m.removeOldestN(ctx, units[key], toRemove)
		}
	}
}

// removeOldestN removes the toRemove oldest containers, oldest first, and returns the rest; a
// container in an unknown state is stopped first, since it could be running (removeOldestN). A
// failed removal is logged, and the container counted as gone so as not to remove more.
func (m *Manager) removeOldestN(ctx context.Context, cs []containerGCInfo, toRemove int) []containerGCInfo {
	keep := len(cs) - toRemove
	byCreated(cs)
	for i := len(cs) - 1; i >= keep; i-- {
		c := cs[i]
		if c.unknown {
			if err := m.o.Runtime.StopContainer(ctx, c.id, 0); err != nil {
				m.log.Error(err, "Failed to stop container", "containerID", c.id)
				continue
			}
		}
		if err := m.removeContainer(ctx, c.id); err != nil {
			m.log.Error(err, "Failed to remove container", "containerID", c.id)
		}
	}
	return cs[:keep]
}

// removeContainer removes the container's log file, then the container (kuberuntime's
// removeContainer and removeContainerLog).
func (m *Manager) removeContainer(ctx context.Context, id string) error {
	m.log.V(4).Info("Removing container", "containerID", id)
	st, err := m.o.Runtime.ContainerStatus(ctx, id, false)
	if err != nil {
		return fmt.Errorf("failed to get container status %q: %w", id, err)
	}
	if path := st.GetStatus().GetLogPath(); path != "" {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("failed to remove container %q log %q: %w", id, path, err)
		}
	}
	return m.o.Runtime.RemoveContainer(ctx, id)
}

type sandboxGCInfo struct {
	id         string
	createTime time.Time
	active     bool
}

// evictSandboxes removes the sandboxes neither ready nor holding a container: all of them for a
// pod that is gone, all but the newest otherwise (evictSandboxes). It returns the pods that still
// have a sandbox.
func (m *Manager) evictSandboxes(ctx context.Context) (map[types.UID]bool, error) {
	ctrs, err := m.agentContainers(ctx)
	if err != nil {
		return nil, err
	}
	all, err := m.o.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{})
	if err != nil {
		return nil, fmt.Errorf("listing sandboxes: %w", err)
	}
	withContainers := map[string]bool{}
	for _, c := range ctrs {
		withContainers[c.PodSandboxId] = true
	}
	byPod := map[types.UID][]sandboxGCInfo{}
	for _, s := range all {
		if s.GetLabels()[labels.PodUID] == "" {
			continue
		}
		uid := types.UID(s.GetMetadata().GetUid())
		byPod[uid] = append(byPod[uid], sandboxGCInfo{
			id: s.Id, createTime: time.Unix(0, s.CreatedAt),
			active: s.State == runtimeapi.PodSandboxState_SANDBOX_READY || withContainers[s.Id],
		})
	}
	uids := make([]types.UID, 0, len(byPod))
	for uid := range byPod {
		uids = append(uids, uid)
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })
	left := map[types.UID]bool{}
	for _, uid := range uids {
		sbs := byPod[uid]
		toRemove := len(sbs) - 1 // the newest stays while the pod exists
		if m.o.Pods.ShouldPodContentBeRemoved(uid) {
			toRemove = len(sbs)
		}
		if m.removeOldestNSandboxes(ctx, sbs, toRemove) {
			left[uid] = true
		}
	}
	return left, nil
}

// removeOldestNSandboxes removes the inactive ones of the toRemove oldest sandboxes
// (removeOldestNSandboxes); it reports whether any sandbox of the pod is left.
func (m *Manager) removeOldestNSandboxes(ctx context.Context, sbs []sandboxGCInfo, toRemove int) bool {
	keep := len(sbs) - toRemove
	sort.SliceStable(sbs, func(i, j int) bool {
		if !sbs[i].createTime.Equal(sbs[j].createTime) {
			return sbs[i].createTime.After(sbs[j].createTime)
		}
		return sbs[i].id > sbs[j].id
	})
	left := keep > 0
	for i := len(sbs) - 1; i >= keep; i-- {
		if sbs[i].active {
			left = true
			continue
		}
		m.log.V(4).Info("Removing sandbox", "sandboxID", sbs[i].id)
		// The kubelet's removeSandbox logs a failure and goes on.
		if err := m.o.Runtime.RemovePodSandbox(ctx, sbs[i].id); err != nil {
			m.log.Error(err, "Failed to remove sandbox", "sandboxID", sbs[i].id)
			left = true
		}
	}
	return left
}

// evictPodLogsDirectories removes the log directory of each pod that is gone
// (evictPodLogsDirectories); a pod whose sandbox the runtime still has keeps its directory, so a
// pod not yet torn down keeps its logs.
func (m *Manager) evictPodLogsDirectories(withSandbox map[types.UID]bool) error {
	dirs, err := os.ReadDir(m.o.PodLogsDir)
	if os.IsNotExist(err) {
		// The kubelet makes the directory at start; the agent makes it with the first pod.
		return nil
	}
	if err != nil {
		return fmt.Errorf("failed to read podLogsDirectory %q: %w", m.o.PodLogsDir, err)
	}
	for _, d := range dirs {
		uid := parsePodUIDFromLogsDirectory(d.Name())
		if withSandbox[uid] || !m.o.Pods.ShouldPodContentBeRemoved(uid) {
			continue
		}
		m.log.V(4).Info("Removing pod logs", "podUID", uid)
		if err := os.RemoveAll(filepath.Join(m.o.PodLogsDir, d.Name())); err != nil {
			m.log.Error(err, "Failed to remove pod logs directory", "path", d.Name())
		}
	}
	return nil
}

// parsePodUIDFromLogsDirectory takes the uid from a "<namespace>_<name>_<uid>" directory name.
func parsePodUIDFromLogsDirectory(name string) types.UID {
	parts := strings.Split(name, "_")
	return types.UID(parts[len(parts)-1])
}
