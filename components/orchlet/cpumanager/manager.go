package cpumanager

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/cpuset"

	"orch.io/orch/components/orchlet/topologymanager"
	"orch.io/orch/components/periodic"
)

// The policies of --cpu-manager-policy.
const (
	PolicyNone   = "none"
	PolicyStatic = "static"
)

// Runtime is what the reconcile loop asks of the CRI runtime.
type Runtime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error
}

// Options configure a Manager.
type Options struct {
	// Policy is --cpu-manager-policy.
	Policy string
	// ReservedCPUs is --reserved-cpus; empty reserves ReservedCount CPUs taken by topology.
	ReservedCPUs string
	// ReservedCount is the CPUs --kube-reserved and --system-reserved reserve, rounded up.
	ReservedCount int
	Topology      *Topology
	// RootDir holds StateFile.
	RootDir string
	Clock   clock.Clock
	Runtime Runtime
	// PodUIDLabel and ContainerNameLabel find a runtime container's pod and name.
	PodUIDLabel, ContainerNameLabel string
	// ActivePods are the pods not yet terminated; their containers keep their CPUs.
	ActivePods func() map[types.UID]bool
	// Ready, when set, says whether ActivePods holds every pod of every source yet; until then no
	// CPUs are taken back, as the kubelet waits for its sources.
	Ready func() bool
	// ReconcilePeriod is --cpu-manager-reconcile-period.
	ReconcilePeriod time.Duration
	Logger          klog.Logger
	// TopologyPolicy is --topology-manager-policy, which align-by-socket must not meet as
	// single-numa-node (the topology manager itself asks the manager as a topologymanager.Provider).
	TopologyPolicy string
	// PolicyOptions are --cpu-manager-policy-options; Enabled says whether a feature gate is on,
	// for the alpha and beta options.
	PolicyOptions map[string]string
	Enabled       func(gate string) bool
}

// Manager assigns CPUs under the static policy; under none it assigns nothing.
type Manager struct {
	o        Options
	reserved cpuset.CPUSet
	// strict (strict-cpu-reservation) keeps the reserved CPUs out of the shared pool too;
	// fullCores (full-pcpus-only) gives a container whole cores only; bySocket (align-by-socket)
	// aligns CPUs to the sockets of the hint's NUMA nodes; acrossNUMA
	// (distribute-cpus-across-numa) spreads a request over NUMA nodes evenly; acrossCores
	// (distribute-cpus-across-cores) spreads it over cores; uncore
	// (prefer-align-cpus-by-uncorecache) packs it into the fewest uncore caches.
	strict, fullCores, bySocket, acrossNUMA, acrossCores, uncore bool
	machine                                                      *machine

	mu    sync.Mutex
	state *state
	// fresh are the pods given CPUs (or restored) since the last reconcile, which ActivePods may
	// not list yet: they are not taken back before the next.
	fresh map[string]bool
	// sent is the cpuset last given to each running container, so reconciling changes only those
	// whose set moved.
	sent map[string]string
}

// New starts the manager: with the static policy it restores the checkpoint, or starts one with
// every CPU shared, and refuses a checkpoint that does not fit the machine or the policy.
func New(o Options) (*Manager, error) {
	m := &Manager{o: o, sent: map[string]string{}, fresh: map[string]bool{}}
	enabled := o.Enabled
	if enabled == nil {
		enabled = func(string) bool { return false }
	}
	switch o.Policy {
	case PolicyNone, "", PolicyStatic:
	default:
		return nil, fmt.Errorf("--cpu-manager-policy (cpuManagerPolicy): unknown policy %q", o.Policy)
	}
	if err := CheckPolicyOptions(o.Policy, o.PolicyOptions, enabled); err != nil {
		return nil, fmt.Errorf("--cpu-manager-policy-options (cpuManagerPolicyOptions): %w", err)
	}
	if o.Policy != PolicyStatic {
		return m, nil
	}
	opts, _ := policyOptionsOf(o.PolicyOptions, enabled)
	m.strict, m.fullCores, m.uncore = opts[optStrictCPUReservation], opts[optFullPCPUsOnly], opts[optPreferAlignByUncoreCache]
	m.bySocket, m.acrossNUMA, m.acrossCores = opts[optAlignBySocket], opts[optDistributeAcrossNUMA], opts[optDistributeAcrossCores]
	if o.Topology == nil || o.Clock == nil || o.Runtime == nil || o.ActivePods == nil {
		return nil, errors.New("cpu manager: a topology, clock, runtime and active pods are required")
	}
	m.machine = newMachine(o.Topology)
	// The kubelet's ValidateStaticPolicyOptions: what align-by-socket needs of the machine and the
	// topology manager.
	if m.bySocket && o.TopologyPolicy == topologymanager.PolicySingleNUMANode {
		return nil, fmt.Errorf("--cpu-manager-policy-options (cpuManagerPolicyOptions): Topology manager %s policy is incompatible with CPUManager %s policy option", topologymanager.PolicySingleNUMANode, optAlignBySocket)
	}
	if m.bySocket && m.machine.numSockets > m.machine.numNUMA {
		return nil, fmt.Errorf("--cpu-manager-policy-options (cpuManagerPolicyOptions): Align by socket is not compatible with hardware where number of sockets are more than number of NUMA (%d sockets, %d NUMA nodes)", m.machine.numSockets, m.machine.numNUMA)
	}
	if o.ReconcilePeriod <= 0 {
		return nil, fmt.Errorf("--cpu-manager-reconcile-period (cpuManagerReconcilePeriod): must be positive, got %v", o.ReconcilePeriod)
	}
	all := o.Topology.All()
	switch {
	case o.ReservedCPUs != "":
		set, err := cpuset.Parse(o.ReservedCPUs)
		if err != nil {
			return nil, fmt.Errorf("--reserved-cpus (reservedSystemCPUs): %q: %w", o.ReservedCPUs, err)
		}
		if !set.IsSubsetOf(all) {
			return nil, fmt.Errorf("--reserved-cpus (reservedSystemCPUs): %s is not a subset of the online CPUs %s", set, all)
		}
		m.reserved = set
	case o.ReservedCount > 0:
		set, err := m.takeByTopology(all, o.ReservedCount)
		if err != nil {
			return nil, fmt.Errorf("reserving %d CPUs: %w", o.ReservedCount, err)
		}
		m.reserved = set
	}
	if m.reserved.IsEmpty() {
		return nil, errors.New("--cpu-manager-policy=static: the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero, or --reserved-cpus")
	}
	if m.reserved.Size() == all.Size() {
		return nil, fmt.Errorf("--reserved-cpus (reservedSystemCPUs): reserving every CPU (%s) leaves none to assign", all)
	}
	st, restored, err := loadState(filepath.Join(o.RootDir, StateFile), PolicyStatic)
	if err != nil {
		return nil, err
	}
	// With strict-cpu-reservation the reserved CPUs are in no pool at all.
	pool := all
	if m.strict {
		pool = all.Difference(m.reserved)
	}
	if restored {
		// Every CPU is shared or held by one container, as the kubelet checks at start, and the
		// reserved ones are all shared, or with strict-cpu-reservation none of them.
		held := st.assigned()
		switch {
		case m.strict && !st.defaultSet.Intersection(m.reserved).IsEmpty():
			return nil, fmt.Errorf("could not restore state from checkpoint %s: some of strictly reserved cpus: %q are present in defaultCpuSet: %q; drain the node and remove the file",
				st.path, st.defaultSet.Intersection(m.reserved), st.defaultSet)
		case !m.strict && !m.reserved.IsSubsetOf(st.defaultSet):
			return nil, fmt.Errorf("could not restore state from checkpoint %s: not all reserved cpus: %q are present in defaultCpuSet: %q; drain the node and remove the file",
				st.path, m.reserved, st.defaultSet)
		case !st.defaultSet.Union(held).Equals(pool) || st.defaultSet.Intersection(held).Size() > 0:
			return nil, fmt.Errorf("could not restore state from checkpoint %s: current set of available CPUs %q doesn't match with CPUs in state %q; drain the node and remove the file",
				st.path, pool, st.defaultSet.Union(held))
		}
	} else {
		st.defaultSet = pool
		if err := st.save(); err != nil {
			return nil, fmt.Errorf("writing %s: %w", st.path, err)
		}
	}
	for uid := range st.assignments {
		m.fresh[uid] = true
	}
	m.state = st
	return m, nil
}

// CPUSet is the cpuset container c of pod runs on: under the static policy its exclusive CPUs
// when pod is Guaranteed and c asks for whole CPUs, else the shared pool; under none, empty (the
// runtime's default). Exclusive CPUs are assigned once per container and kept across restarts,
// until Reconcile finds the pod gone.
func (m *Manager) CPUSet(pod *corev1.Pod, c *corev1.Container) (string, error) {
	if m.state == nil {
		return "", nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	n := exclusiveCPUs(pod, c)
	if n == 0 {
		return m.state.defaultSet.String(), nil
	}
	set, err := m.allocateLocked(pod, c, n, 0)
	if err != nil {
		return "", err
	}
	return set.String(), nil
}

// allocateLocked gives c its n CPUs, or the ones it holds: from the CPUs of affinity's NUMA nodes
// (their sockets' under align-by-socket) first (every node when 0), then from the others, as the
// kubelet's allocateCPUs; whole cores only under full-pcpus-only. The assignment is written to the
// checkpoint.
func (m *Manager) allocateLocked(pod *corev1.Pod, c *corev1.Container, n int, affinity topologymanager.Mask) (cpuset.CPUSet, error) {
	uid := string(pod.UID)
	if set, ok := m.state.assignments[uid][c.Name]; ok {
		return set, nil
	}
	free := m.state.defaultSet.Difference(m.reserved).Union(m.reusableLocked(pod))
	if m.fullCores {
		free = m.wholeCores(free)
	}
	if free.Size() < n {
		return cpuset.New(), fmt.Errorf("not enough cpus available to satisfy request: requested=%d, available=%d", n, free.Size())
	}
	set := cpuset.New()
	if affinity != 0 {
		aligned := free.Intersection(m.alignedCPUs(affinity))
		k := min(n, aligned.Size())
		var err error
		if set, err = m.takeByTopology(aligned, k); err != nil {
			return cpuset.New(), err
		}
		free = free.Difference(set)
		n -= k
	}
	if n > 0 {
		rest, err := m.takeByTopology(free, n)
		if err != nil {
			return cpuset.New(), err
		}
		set = set.Union(rest)
	}
	if m.state.assignments[uid] == nil {
		m.state.assignments[uid] = map[string]cpuset.CPUSet{}
	}
	m.state.assignments[uid][c.Name] = set
	m.fresh[uid] = true
	m.state.defaultSet = m.state.defaultSet.Difference(set)
	if err := m.state.save(); err != nil {
		return cpuset.New(), fmt.Errorf("writing %s: %w", m.state.path, err)
	}
	return set, nil
}

// alignedCPUs are the CPUs of the mask's NUMA nodes, or under align-by-socket of their sockets
// (the kubelet's getAlignedCPUs).
func (m *Manager) alignedCPUs(mask topologymanager.Mask) cpuset.CPUSet {
	set := m.cpusOf(mask)
	if !m.bySocket {
		return set
	}
	d := m.machine.details
	return d.in(cpuID, socketID, d.keepOnly(set).all(socketID).UnsortedList()...)
}

// takeByTopology picks n CPUs of available as the kubelet's static policy does under its options.
func (m *Manager) takeByTopology(available cpuset.CPUSet, n int) (cpuset.CPUSet, error) {
	if m.acrossNUMA {
		size := 1
		if m.fullCores {
			size = m.machine.cpusPerCore()
		}
		return takeDistributed(m.machine, available, n, size, m.acrossCores)
	}
	return takePacked(m.machine, available, n, m.acrossCores, m.uncore)
}

// cpusOf are the CPUs of the mask's NUMA nodes.
func (m *Manager) cpusOf(mask topologymanager.Mask) cpuset.CPUSet {
	var ids []int
	for _, c := range m.o.Topology.CPUs {
		if mask&topologymanager.MaskOf(c.NUMANode) != 0 {
			ids = append(ids, c.ID)
		}
	}
	return cpuset.New(ids...)
}

// ReasonSMTAlignmentError is the admission failure of a pod that full-pcpus-only cannot give
// whole cores.
const ReasonSMTAlignmentError = "SMTAlignmentError"

// Admit is the CPU manager's own admission: under full-pcpus-only, the kubelet's SMT alignment
// check: each container with exclusive CPUs asks for a multiple of the CPUs of a core, and the
// pod's exclusive CPUs (its regular containers' together, or its largest init container's) fit in
// the cores wholly free. NUMA alignment is the topology manager's, which asks the manager as one
// of its providers (Hints, Allocate, Release).
func (m *Manager) Admit(pod *corev1.Pod) (bool, string, string) {
	if m.state == nil || !m.fullCores {
		return true, "", ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	regular, initMax := podExclusiveCPUs(pod)
	perCore := m.machine.cpusPerCore()
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if n := exclusiveCPUs(pod, &cs[i]); n%perCore != 0 {
				return false, ReasonSMTAlignmentError, fmt.Sprintf("SMT Alignment Error: requested %d cpus not multiple cpus per core = %d", n, perCore)
			}
		}
	}
	available := m.wholeCores(m.state.defaultSet.Difference(m.reserved)).Size()
	if need := max(regular, initMax); need > available {
		return false, ReasonSMTAlignmentError, fmt.Sprintf("SMT Alignment Error: not enough free physical CPUs: available physical CPUs = %d, requested CPUs = %d, CPUs per core = %d", available, need, perCore)
	}
	return true, "", ""
}

// podExclusiveCPUs are the exclusive CPUs of the pod's regular containers together and of its
// largest init container.
func podExclusiveCPUs(pod *corev1.Pod) (regular, initMax int) {
	for i := range pod.Spec.InitContainers {
		initMax = max(initMax, exclusiveCPUs(pod, &pod.Spec.InitContainers[i]))
	}
	for i := range pod.Spec.Containers {
		regular += exclusiveCPUs(pod, &pod.Spec.Containers[i])
	}
	return regular, initMax
}

// Hints are the CPU hints the topology manager merges (the kubelet's GetTopologyHints and
// GetPodTopologyHints): c's exclusive CPUs, or the pod's (the most of its regular containers
// together and its largest init container); none under the none policy.
func (m *Manager) Hints(pod *corev1.Pod, c *corev1.Container) [][]topologymanager.Hint {
	if m.state == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c == nil {
		regular, initMax := podExclusiveCPUs(pod)
		return [][]topologymanager.Hint{m.hintsLocked(pod, nil, max(regular, initMax))}
	}
	return [][]topologymanager.Hint{m.hintsLocked(pod, c, exclusiveCPUs(pod, c))}
}

// Allocate gives c its exclusive CPUs at admission, from the merged hint's NUMA nodes first, as
// the kubelet's topology manager has them allocated.
func (m *Manager) Allocate(pod *corev1.Pod, c *corev1.Container, affinity topologymanager.Mask) error {
	if m.state == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := exclusiveCPUs(pod, c); n > 0 {
		_, err := m.allocateLocked(pod, c, n, affinity)
		return err
	}
	return nil
}

// Release gives the CPUs of a pod refused at admission back to the shared pool.
func (m *Manager) Release(pod *corev1.Pod) {
	if m.state == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	uid := string(pod.UID)
	for _, set := range m.state.assignments[uid] {
		m.state.defaultSet = m.state.defaultSet.Union(set)
	}
	delete(m.state.assignments, uid)
	_ = m.state.save()
}

// hintsLocked are the kubelet's CPU topology hints for request CPUs (generateCPUTopologyHints):
// every set of NUMA nodes whose free CPUs (with the pod's reusable ones, all of which it must
// hold) are enough, preferred when it is as small as the fewest nodes whose CPUs could hold the
// request at all, or under align-by-socket when its nodes span as few sockets as the fewest nodes
// need. A container holding CPUs already is hinted where they are; nil (no preference) for no
// exclusive CPUs, an empty list when nothing fits.
func (m *Manager) hintsLocked(pod *corev1.Pod, c *corev1.Container, request int) []topologymanager.Hint {
	if request == 0 {
		return nil
	}
	available := m.state.defaultSet.Difference(m.reserved)
	if m.fullCores {
		available = m.wholeCores(available)
	}
	reusable := m.reusableLocked(pod)
	if c != nil {
		if held, ok := m.state.assignments[string(pod.UID)][c.Name]; ok {
			available, reusable = held, cpuset.New()
		}
	}
	nodes := m.o.Topology.NUMANodes()
	minSize := len(nodes)
	hints := []topologymanager.Hint{}
	for bitsSet := 1; bitsSet < 1<<len(nodes); bitsSet++ {
		var mask topologymanager.Mask
		for i, n := range nodes {
			if bitsSet&(1<<i) != 0 {
				mask |= topologymanager.MaskOf(n)
			}
		}
		inMask := m.cpusOf(mask)
		if inMask.Size() >= request && mask.Count() < minSize {
			minSize = mask.Count()
		}
		if !reusable.IsSubsetOf(inMask) {
			continue
		}
		if reusable.Size()+available.Intersection(inMask).Size() >= request {
			hints = append(hints, topologymanager.Hint{Affinity: mask})
		}
	}
	for i := range hints {
		hints[i].Preferred = hints[i].Affinity.Count() == minSize || m.bySocket && m.socketAligned(hints[i].Affinity, minSize)
	}
	return hints
}

// socketAligned says whether the mask's NUMA nodes span as few sockets as minSize nodes need (the
// kubelet's isHintSocketAligned).
func (m *Manager) socketAligned(mask topologymanager.Mask, minSize int) bool {
	perSocket := m.machine.numNUMA / m.machine.numSockets
	if perSocket == 0 {
		return false
	}
	minSockets := (minSize + perSocket - 1) / perSocket
	return m.machine.details.keepOnly(m.cpusOf(mask)).all(socketID).Size() == minSockets
}

// wholeCores are the CPUs of set whose core's every CPU is in set (GetAvailablePhysicalCPUs).
func (m *Manager) wholeCores(set cpuset.CPUSet) cpuset.CPUSet {
	byCore := map[[2]int][]int{}
	for _, c := range m.o.Topology.CPUs {
		k := [2]int{c.Socket, c.Core}
		byCore[k] = append(byCore[k], c.ID)
	}
	var out []int
	for _, ids := range byCore {
		if set.Union(cpuset.New(ids...)).Equals(set) {
			out = append(out, ids...)
		}
	}
	return cpuset.New(out...)
}

// reusableLocked are the CPUs of pod's init containers that no other container of the pod holds:
// an init container has finished before the next container starts, so the kubelet lets the next
// reuse its CPUs. Sidecars (init containers that restart always) keep theirs.
func (m *Manager) reusableLocked(pod *corev1.Pod) cpuset.CPUSet {
	regularInit := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			regularInit[c.Name] = true
		}
	}
	reusable, held := cpuset.New(), cpuset.New()
	for name, set := range m.state.assignments[string(pod.UID)] {
		if regularInit[name] {
			reusable = reusable.Union(set)
		} else {
			held = held.Union(set)
		}
	}
	return reusable.Difference(held)
}

// removeStaleLocked gives the CPUs of pods no longer active back to the shared pool.
func (m *Manager) removeStaleLocked(active map[types.UID]bool) bool {
	if m.o.Ready != nil && !m.o.Ready() {
		return false
	}
	changed := false
	for uid, cs := range m.state.assignments {
		if active[types.UID(uid)] || m.fresh[uid] {
			continue
		}
		for _, set := range cs {
			m.state.defaultSet = m.state.defaultSet.Union(set)
		}
		delete(m.state.assignments, uid)
		changed = true
	}
	return changed
}

// Reconcile frees the CPUs of pods gone and gives each running container of an active pod the
// cpuset it should have when it differs from the last one given, as the kubelet's reconcile loop.
func (m *Manager) Reconcile(ctx context.Context) error {
	if m.state == nil {
		return nil
	}
	active := m.o.ActivePods()
	m.mu.Lock()
	stale := m.removeStaleLocked(active)
	clear(m.fresh)
	if stale {
		if err := m.state.save(); err != nil {
			m.mu.Unlock()
			return fmt.Errorf("writing %s: %w", m.state.path, err)
		}
	}
	m.mu.Unlock()
	cs, err := m.o.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		return fmt.Errorf("listing containers: %w", err)
	}
	running := map[string]bool{}
	var errs []error
	for _, c := range cs {
		uid, name := c.Labels[m.o.PodUIDLabel], c.Labels[m.o.ContainerNameLabel]
		if uid == "" || name == "" || !active[types.UID(uid)] {
			continue
		}
		running[c.Id] = true
		m.mu.Lock()
		set, ok := m.state.assignments[uid][name]
		if !ok {
			set = m.state.defaultSet
		}
		want, sent := set.String(), m.sent[c.Id]
		m.mu.Unlock()
		if want == sent {
			continue
		}
		if err := m.o.Runtime.UpdateContainerResources(ctx, c.Id, &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{CpusetCpus: want}}); err != nil {
			errs = append(errs, fmt.Errorf("updating the cpuset of container %s (%s of pod %s): %w", c.Id, name, uid, err))
			continue
		}
		m.mu.Lock()
		m.sent[c.Id] = want
		m.mu.Unlock()
	}
	m.mu.Lock()
	for id := range m.sent {
		if !running[id] {
			delete(m.sent, id)
		}
	}
	m.mu.Unlock()
	return errors.Join(errs...)
}

// Run reconciles every ReconcilePeriod on the clock until ctx ends; under none it only waits.
func (m *Manager) Run(ctx context.Context) error {
	if m.state == nil {
		<-ctx.Done()
		return ctx.Err()
	}
	return periodic.Until(ctx, m.o.Clock, m.o.ReconcilePeriod, func(ctx context.Context) {
		if err := m.Reconcile(ctx); err != nil && ctx.Err() == nil {
			m.o.Logger.Error(err, "Failed to reconcile the CPU manager's state")
		}
	})
}

// exclusiveCPUs is how many CPUs c of pod gets to itself: its CPU request when the pod is
// Guaranteed and the request is a whole number, else 0.
func exclusiveCPUs(pod *corev1.Pod, c *corev1.Container) int {
	if !guaranteed(pod) {
		return 0
	}
	q := request(c, corev1.ResourceCPU)
	if q.MilliValue()%1000 != 0 || q.Value() <= 0 || q.Value() > math.MaxInt32 {
		return 0
	}
	return int(q.Value())
}

// request is c's request of name, its limit when it gives no request (the API's defaulting).
func request(c *corev1.Container, name corev1.ResourceName) resource.Quantity {
	if q, ok := c.Resources.Requests[name]; ok {
		return q
	}
	return c.Resources.Limits[name]
}

// guaranteed is Kubernetes' Guaranteed QoS class: every container limits cpu and memory, and
// requests what it limits.
func guaranteed(pod *corev1.Pod) bool {
	all := append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...)
	for i := range all {
		c := &all[i]
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			limit, ok := c.Resources.Limits[name]
			if !ok || limit.IsZero() {
				return false
			}
			if req := request(c, name); req.Cmp(limit) != 0 {
				return false
			}
		}
	}
	return len(all) > 0
}

// Static says whether the manager assigns CPUs (the static policy).
func (m *Manager) Static() bool { return m.state != nil }
