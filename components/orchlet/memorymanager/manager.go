package memorymanager

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/topologymanager"
	"orch.io/orch/components/periodic"
)

// The policies of --memory-manager-policy.
const (
	PolicyNone   = "None"
	PolicyStatic = "Static"
)

// Options configure a Manager.
type Options struct {
	// Policy is --memory-manager-policy.
	Policy string
	// Nodes are the machine's NUMA nodes (Discover).
	Nodes []Node
	// NodeReservation is what node allocatable sets aside: --kube-reserved plus --system-reserved,
	// and the hard eviction threshold for memory.
	NodeReservation corev1.ResourceList
	// Reserved is --reserved-memory.
	Reserved []v1beta1.MemoryReservation
	// RootDir holds StateFile.
	RootDir string
	// ActivePods are the pods not yet terminated; their containers keep their memory.
	ActivePods func() map[types.UID]bool
	// Ready, when set, says whether ActivePods holds every pod of every source yet.
	Ready func() bool
	// Clock and ReconcilePeriod pace the removal of the memory of pods gone (the kubelet removes
	// it at its next admission; this agent also every period, so a quiet node gives it back).
	Clock           clock.Clock
	ReconcilePeriod time.Duration
}

// Manager gives the containers of Guaranteed pods memory from NUMA nodes under the Static policy;
// under None it gives nothing and writes its empty checkpoint, as the kubelet does (so a node
// that leaves Static is refused until drained).
type Manager struct {
	o        Options
	reserved map[int]map[corev1.ResourceName]uint64

	mu    sync.Mutex
	state *state
	// reusable is the memory of the admitted pod's init containers that its next containers may
	// take again (the kubelet's initContainersReusableMemory), by pod, NUMA mask and type.
	reusable map[string]map[topologymanager.Mask]map[corev1.ResourceName]uint64
	// fresh are the pods given memory since the last reconcile, which ActivePods may not list yet.
	fresh map[string]bool
	// pinningRequests and pinningErrors are the kubelet's memory_manager_pinning_requests_total
	// and memory_manager_pinning_errors_total: the allocations of a Guaranteed pod's container
	// under Static, and those that failed.
	pinningRequests, pinningErrors prometheus.Counter
}

// New validates --reserved-memory against the machine and node allocatable as the kubelet's
// memory manager does, restores the checkpoint (refused when the policy changed or it does not
// fit the machine) and starts the policy.
func New(o Options) (*Manager, error) {
	m := &Manager{o: o, reusable: map[string]map[topologymanager.Mask]map[corev1.ResourceName]uint64{}, fresh: map[string]bool{},
		pinningRequests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orchlet_memory_manager_pinning_requests_total", Help: "The number of memory pages allocations which required pinning.",
		}),
		pinningErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "orchlet_memory_manager_pinning_errors_total", Help: "The number of memory pages allocations which required pinning that failed.",
		}),
	}
	switch o.Policy {
	case PolicyNone, "":
		if len(o.Reserved) > 0 {
			return nil, errors.New("--reserved-memory (reservedMemory): it acts only with --memory-manager-policy=Static; leave it empty")
		}
		o.Policy = PolicyNone
	case PolicyStatic:
		if len(o.Nodes) == 0 {
			return nil, errors.New("--memory-manager-policy=Static: the machine's NUMA nodes are unknown (no sysfs devices/system/node to read)")
		}
		var err error
		if m.reserved, err = systemReserved(o.Nodes, o.NodeReservation, o.Reserved); err != nil {
			return nil, fmt.Errorf("--reserved-memory (reservedMemory): %w", err)
		}
		var total uint64
		for _, r := range m.reserved {
			total += r[corev1.ResourceMemory]
		}
		if total == 0 {
			return nil, errors.New("--reserved-memory (reservedMemory): [memorymanager] you should specify the system reserved memory")
		}
	default:
		return nil, fmt.Errorf("--memory-manager-policy (memoryManagerPolicy): unknown policy: %q", o.Policy)
	}
	if o.RootDir == "" {
		if o.Policy == PolicyStatic {
			return nil, fmt.Errorf("--memory-manager-policy=Static: --root-dir is required for %s", StateFile)
		}
		return m, nil // a simulated machine: None has nothing to record
	}
	st, err := loadState(filepath.Join(o.RootDir, StateFile), o.Policy)
	if err != nil {
		return nil, err
	}
	m.state = st
	if o.Policy == PolicyStatic {
		if err := m.validateState(); err != nil {
			return nil, fmt.Errorf("%w; please drain this node and delete the memory manager checkpoint file %q before restarting orchlet", err, st.path)
		}
		if o.ActivePods == nil || o.Clock == nil || o.ReconcilePeriod <= 0 {
			return nil, errors.New("memory manager: active pods, a clock and a reconcile period are required")
		}
		for uid := range st.assignments {
			m.fresh[uid] = true
		}
	}
	return m, nil
}

// Describe and Collect make the manager a prometheus.Collector of its metrics, served under every
// policy (0 under None), as the kubelet registers them.
func (m *Manager) Describe(ch chan<- *prometheus.Desc) {
	m.pinningRequests.Describe(ch)
	m.pinningErrors.Describe(ch)
}

func (m *Manager) Collect(ch chan<- prometheus.Metric) {
	m.pinningRequests.Collect(ch)
	m.pinningErrors.Collect(ch)
}

// Static says whether the manager assigns memory.
func (m *Manager) Static() bool { return m.o.Policy == PolicyStatic }

// systemReserved is the kubelet's getSystemReservedMemory: every reservation on a NUMA node of the
// machine, and per memory type the reservations' total equal to what node allocatable reserves.
func systemReserved(nodes []Node, allocatable corev1.ResourceList, reserved []v1beta1.MemoryReservation) (map[int]map[corev1.ResourceName]uint64, error) {
	out := map[int]map[corev1.ResourceName]uint64{}
	for _, n := range nodes {
		out[n.ID] = map[corev1.ResourceName]uint64{}
	}
	totals := map[corev1.ResourceName]resource.Quantity{}
	for _, r := range reserved {
		if out[int(r.NumaNode)] == nil {
			return nil, fmt.Errorf("the reserved memory configuration references a NUMA node %d that does not exist on this machine", r.NumaNode)
		}
		for name, q := range r.Limits {
			t := totals[name]
			t.Add(q)
			totals[name] = t
			v, ok := q.AsInt64()
			if !ok {
				return nil, fmt.Errorf("could not covert a variable of type Quantity to int64")
			}
			out[int(r.NumaNode)][name] = uint64(v)
		}
	}
	names := map[corev1.ResourceName]bool{}
	for name := range totals {
		names[name] = true
	}
	for name := range allocatable {
		if name == corev1.ResourceMemory || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			names[name] = true
		}
	}
	for _, name := range sortedNames(names) {
		want := resource.NewQuantity(0, resource.DecimalSI)
		if q, ok := allocatable[name]; ok {
			want.Add(q)
		}
		got := resource.NewQuantity(0, resource.DecimalSI)
		if q, ok := totals[name]; ok {
			got.Add(q)
		}
		if !want.Equal(*got) {
			return nil, fmt.Errorf("the total amount %q of type %q is not equal to the value %q determined by Node Allocatable feature", got.String(), name, want.String())
		}
	}
	return out, nil
}

func sortedNames[V any](m map[corev1.ResourceName]V) []corev1.ResourceName {
	var out []corev1.ResourceName
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// defaultMachineState is every node's memory and huge pages, less what --reserved-memory keeps
// on it, all free; a node's memory also less its huge pages.
func (m *Manager) defaultMachineState() NUMANodeMap {
	out := NUMANodeMap{}
	for _, n := range m.o.Nodes {
		s := &NUMANodeState{MemoryMap: map[corev1.ResourceName]*MemoryTable{}, Cells: []int{n.ID}}
		var huge uint64
		for _, h := range n.HugePages {
			name := corev1.ResourceName(corev1.ResourceHugePagesPrefix + resource.NewQuantity(int64(h.PageSizeKiB)*1024, resource.BinarySI).String())
			total := h.NumPages * h.PageSizeKiB * 1024
			reserved := m.reserved[n.ID][name]
			s.MemoryMap[name] = &MemoryTable{TotalMemSize: total, SystemReserved: reserved, Allocatable: total - reserved, Free: total - reserved}
			huge += total
		}
		reserved := m.reserved[n.ID][corev1.ResourceMemory]
		allocatable := n.Memory - reserved - huge
		s.MemoryMap[corev1.ResourceMemory] = &MemoryTable{TotalMemSize: n.Memory, SystemReserved: reserved, Allocatable: allocatable, Free: allocatable}
		out[n.ID] = s
	}
	return out
}

// validateState is the kubelet's: an empty checkpoint takes the default machine state; a restored
// one must be the default with its assignments applied.
func (m *Manager) validateState() error {
	st := m.state
	if len(st.machine) == 0 {
		if len(st.assignments) != 0 {
			return errors.New("[memorymanager] machine state can not be empty when it has memory assignments")
		}
		st.machine = m.defaultMachineState()
		return st.save()
	}
	expected := m.defaultMachineState()
	for pod, cs := range st.assignments {
		for name, blocks := range cs {
			for _, b := range blocks {
				for _, id := range b.NUMAAffinity {
					ns, ok := expected[id]
					if !ok {
						return fmt.Errorf("[memorymanager] (pod: %s, container: %s) the memory assignment uses the NUMA that does not exist", pod, name)
					}
					if ns.MemoryMap[b.Type] == nil {
						return fmt.Errorf("[memorymanager] (pod: %s, container: %s) the memory assignment uses memory resource that does not exist", pod, name)
					}
				}
				reserve(expected, b.NUMAAffinity, b.Type, b.Size)
			}
		}
	}
	if !machineStatesEqual(st.machine, expected) {
		return errors.New("[memorymanager] the expected machine state is different from the real one")
	}
	return nil
}

// reserve takes size of type name from the nodes in order, each node counting the assignment
// (the kubelet's updateMachineState).
func reserve(ms NUMANodeMap, nodes []int, name corev1.ResourceName, size uint64) {
	for _, id := range nodes {
		ms[id].NumberOfAssignments++
		ms[id].Cells = slices.Clone(nodes)
		t := ms[id].MemoryMap[name]
		if size == 0 || t.Free == 0 {
			continue
		}
		take := min(size, t.Free)
		t.Reserved += take
		t.Free -= take
		size -= take
	}
}

// machineStatesEqual is the kubelet's areMachineStatesEqual: the same nodes, assignments, groups
// and sizes, free and reserved compared over each node's group.
func machineStatesEqual(a, b NUMANodeMap) bool {
	if len(a) != len(b) {
		return false
	}
	for id, sa := range a {
		sb, ok := b[id]
		if !ok || sa.NumberOfAssignments != sb.NumberOfAssignments || !sameGroup(sa.Cells, sb.Cells) || len(sa.MemoryMap) != len(sb.MemoryMap) {
			return false
		}
		for name, ta := range sa.MemoryMap {
			tb, ok := sb.MemoryMap[name]
			if !ok || ta.TotalMemSize != tb.TotalMemSize || ta.SystemReserved != tb.SystemReserved || ta.Allocatable != tb.Allocatable {
				return false
			}
			var fa, ra, fb, rb uint64
			for _, c := range sa.Cells {
				if a[c] == nil || b[c] == nil || a[c].MemoryMap[name] == nil || b[c].MemoryMap[name] == nil {
					return false
				}
				fa, ra = fa+a[c].MemoryMap[name].Free, ra+a[c].MemoryMap[name].Reserved
				fb, rb = fb+b[c].MemoryMap[name].Free, rb+b[c].MemoryMap[name].Reserved
			}
			if fa != fb || ra != rb {
				return false
			}
		}
	}
	return true
}

func sameGroup(a, b []int) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// maskOf is the mask of the checkpoint's node list.
func maskOf(nodes []int) topologymanager.Mask { return topologymanager.MaskOf(nodes...) }

// requested is the memory and huge pages c requests, in bytes: a limit without a request is
// the request, as the API defaults it.
func requested(c *corev1.Container) (map[corev1.ResourceName]uint64, error) {
	out := map[corev1.ResourceName]uint64{}
	asked := c.Resources.Limits.DeepCopy()
	for name, q := range c.Resources.Requests {
		if asked == nil {
			asked = corev1.ResourceList{}
		}
		asked[name] = q
	}
	for name, q := range asked {
		if name != corev1.ResourceMemory && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
			continue
		}
		v, ok := q.AsInt64()
		if !ok {
			return nil, errors.New("[memorymanager] failed to represent quantity as int64")
		}
		out[name] = uint64(v)
	}
	return out, nil
}

// restartable says whether an init container is a sidecar (restartPolicy Always).
func restartable(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// podRequested is the pod's memory for the pod scope (the kubelet's getPodRequestedResources):
// its regular containers' and sidecars' together, or its largest init container's with the
// sidecars started before it, whichever is more.
func podRequested(pod *corev1.Pod) (map[corev1.ResourceName]uint64, error) {
	byInit, bySidecars := map[corev1.ResourceName]uint64{}, map[corev1.ResourceName]uint64{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		req, err := requested(c)
		if err != nil {
			return nil, err
		}
		for name, q := range req {
			if restartable(c) {
				bySidecars[name] += q
			} else if bySidecars[name]+q > byInit[name] {
				byInit[name] = bySidecars[name] + q
			}
		}
	}
	byApp := map[corev1.ResourceName]uint64{}
	for i := range pod.Spec.Containers {
		req, err := requested(&pod.Spec.Containers[i])
		if err != nil {
			return nil, err
		}
		for name, q := range req {
			byApp[name] += q
		}
	}
	out := map[corev1.ResourceName]uint64{}
	for name, q := range byApp {
		out[name] = max(q+bySidecars[name], byInit[name])
	}
	return out, nil
}

// Hints are the memory manager's topology hints for c (nil c: the whole pod, for the pod scope),
// one list per memory type it requests, as the kubelet's GetTopologyHints: none (no preference)
// for a pod that is not Guaranteed; the NUMA nodes already assigned, when they are; else every
// set of nodes whose free memory of each type is enough and whose nodes are not grouped with
// others, preferred when as small as the fewest nodes whose allocatable could hold it.
func (m *Manager) Hints(pod *corev1.Pod, c *corev1.Container) [][]topologymanager.Hint {
	if !m.Static() || !guaranteed(pod) {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeStaleLocked(m.o.ActivePods())
	var req map[corev1.ResourceName]uint64
	var err error
	containers := []*corev1.Container{c}
	if c == nil {
		req, err = podRequested(pod)
		containers = nil
		for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
			for i := range cs {
				containers = append(containers, &cs[i])
			}
		}
	} else {
		req, err = requested(c)
	}
	if err != nil {
		return nil
	}
	for _, ctn := range containers {
		if blocks := m.state.assignments[string(pod.UID)][ctn.Name]; blocks != nil {
			return regenerate(blocks, req)
		}
	}
	byType := m.calculateHints(m.state.machine, pod, req)
	var out [][]topologymanager.Hint
	for _, name := range sortedNames(byType) {
		out = append(out, byType[name])
	}
	return out
}

// regenerate hints a container its assigned nodes, each type preferred there (the kubelet's
// regenerateHints); assignments that no longer match the request give no preference.
func regenerate(blocks []Block, req map[corev1.ResourceName]uint64) [][]topologymanager.Hint {
	if len(blocks) != len(req) {
		return nil
	}
	var out [][]topologymanager.Hint
	for _, b := range blocks {
		if q, ok := req[b.Type]; !ok || q != b.Size {
			return nil
		}
		out = append(out, []topologymanager.Hint{{Affinity: maskOf(b.NUMAAffinity), Preferred: true}})
	}
	return out
}

// calculateHints is the kubelet's calculateHints over every non-empty set of NUMA nodes.
func (m *Manager) calculateHints(ms NUMANodeMap, pod *corev1.Pod, req map[corev1.ResourceName]uint64) map[corev1.ResourceName][]topologymanager.Hint {
	var nodes []int
	for id := range ms {
		nodes = append(nodes, id)
	}
	slices.Sort(nodes)
	minSize := len(nodes)
	hints := map[corev1.ResourceName][]topologymanager.Hint{}
	for bitsSet := 1; bitsSet < 1<<len(nodes); bitsSet++ {
		var maskNodes []int
		for i, n := range nodes {
			if bitsSet&(1<<i) != 0 {
				maskNodes = append(maskNodes, n)
			}
		}
		mask := maskOf(maskNodes)
		single := len(maskNodes) == 1
		free, allocatable := map[corev1.ResourceName]uint64{}, map[corev1.ResourceName]uint64{}
		for _, id := range maskNodes {
			for name := range req {
				if t := ms[id].MemoryMap[name]; t != nil {
					free[name] += t.Free
					allocatable[name] += t.Allocatable
				}
			}
		}
		fits := true
		for name, q := range req {
			if allocatable[name] < q {
				fits = false
			}
		}
		if !fits {
			continue
		}
		minSize = min(minSize, len(maskNodes))
		if single && len(ms[maskNodes[0]].Cells) > 1 {
			continue // the node is part of a group: only the whole group can be hinted
		}
		grouped := false
		for _, id := range maskNodes {
			if !single && ms[id].NumberOfAssignments > 0 && (len(ms[id].Cells) == 1 || !sameGroup(ms[id].Cells, maskNodes)) {
				grouped = true
			}
		}
		if grouped {
			continue
		}
		for name, q := range req {
			if free[name]+m.reusableOf(pod, mask, name) < q {
				fits = false
			}
		}
		if !fits {
			continue
		}
		for name := range req {
			hints[name] = append(hints[name], topologymanager.Hint{Affinity: mask})
		}
	}
	for name := range hints {
		for i := range hints[name] {
			hints[name][i].Preferred = hints[name][i].Affinity.Count() == minSize
		}
	}
	return hints
}

func (m *Manager) reusableOf(pod *corev1.Pod, mask topologymanager.Mask, name corev1.ResourceName) uint64 {
	return m.reusable[string(pod.UID)][mask][name]
}

// Allocate gives c of a Guaranteed pod its memory from the NUMA nodes of affinity, the topology
// manager's merged hint (0: none, then the best hint of its own), extended to a group of nodes
// that can hold it when affinity cannot, as the kubelet's static policy; a container holding
// memory keeps it. The assignment is written to the checkpoint. Each call for a Guaranteed pod
// counts as a pinning request, and each that fails as a pinning error, as the kubelet counts them.
func (m *Manager) Allocate(pod *corev1.Pod, c *corev1.Container, affinity topologymanager.Mask) (err error) {
	if !m.Static() || !guaranteed(pod) {
		return nil
	}
	m.pinningRequests.Inc()
	defer func() {
		if err != nil {
			m.pinningErrors.Inc()
		}
	}()
	m.mu.Lock()
	defer m.mu.Unlock()
	uid := string(pod.UID)
	if blocks := m.state.assignments[uid][c.Name]; blocks != nil {
		m.updateReusableLocked(pod, c, blocks)
		return nil
	}
	req, err := requested(c)
	if err != nil {
		return err
	}
	ms := m.state.machine.Clone()
	best := topologymanager.Hint{Affinity: affinity, Preferred: true}
	if affinity == 0 {
		h, ok := bestHint(m.calculateHints(ms, pod, req)[corev1.ResourceMemory])
		if !ok {
			return errors.New("[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available")
		}
		best = h
	}
	if !satisfies(ms, best.Affinity, req) {
		var within []topologymanager.Hint
		for _, h := range m.calculateHints(ms, pod, req)[corev1.ResourceMemory] {
			if h.Affinity&best.Affinity == best.Affinity {
				within = append(within, h)
			}
		}
		h, ok := bestHint(within)
		if !ok {
			return errors.New("[memorymanager] failed to find NUMA nodes to extend the current topology hint")
		}
		if !h.Preferred && best.Preferred {
			return errors.New("[memorymanager] failed to find the extended preferred hint")
		}
		best = h
	}
	nodes := best.Affinity.Nodes()
	for _, id := range nodes {
		if len(nodes) > 1 && ms[id].NumberOfAssignments > 0 && (len(ms[id].Cells) == 1 || !sameGroup(ms[id].Cells, nodes)) {
			return errors.New("[memorymanager] preferred hint violates NUMA node allocation")
		}
	}
	var blocks []Block
	for _, name := range sortedNames(req) {
		size := req[name]
		blocks = append(blocks, Block{NUMAAffinity: nodes, Type: name, Size: size})
		reuse := m.reusableOf(pod, best.Affinity, name)
		reserve(ms, nodes, name, size-min(size, reuse))
	}
	m.updateReusableLocked(pod, c, blocks)
	m.state.machine = ms
	if m.state.assignments[uid] == nil {
		m.state.assignments[uid] = map[string][]Block{}
	}
	m.state.assignments[uid][c.Name] = blocks
	m.takeFromInitLocked(pod, c, blocks)
	m.fresh[uid] = true
	return m.state.save()
}

// bestHint is the kubelet's findBestHint: preferred first, then the narrowest.
func bestHint(hints []topologymanager.Hint) (topologymanager.Hint, bool) {
	var best topologymanager.Hint
	for _, h := range hints {
		if best.Affinity == 0 || (h.Preferred && !best.Preferred) ||
			(h.Preferred == best.Preferred && narrower(h.Affinity, best.Affinity)) {
			best = h
		}
	}
	return best, best.Affinity != 0
}

func narrower(a, b topologymanager.Mask) bool {
	if a.Count() != b.Count() {
		return a.Count() < b.Count()
	}
	return a < b
}

// satisfies says whether the mask's nodes have the free memory of each type requested.
func satisfies(ms NUMANodeMap, mask topologymanager.Mask, req map[corev1.ResourceName]uint64) bool {
	free := map[corev1.ResourceName]uint64{}
	for _, id := range mask.Nodes() {
		for name := range req {
			if ms[id] != nil && ms[id].MemoryMap[name] != nil {
				free[name] += ms[id].MemoryMap[name].Free
			}
		}
	}
	for name, q := range req {
		if free[name] < q {
			return false
		}
	}
	return true
}

// updateReusableLocked keeps the kubelet's account of what a pod's init containers leave for its
// next containers: an init container's blocks become reusable (the largest per mask and type);
// a later container's blocks use them up.
func (m *Manager) updateReusableLocked(pod *corev1.Pod, c *corev1.Container, blocks []Block) {
	uid := string(pod.UID)
	for other := range m.reusable {
		if other != uid {
			delete(m.reusable, other)
		}
	}
	if regularInit(pod, c) {
		if m.reusable[uid] == nil {
			m.reusable[uid] = map[topologymanager.Mask]map[corev1.ResourceName]uint64{}
		}
		for _, b := range blocks {
			k := maskOf(b.NUMAAffinity)
			if m.reusable[uid][k] == nil {
				m.reusable[uid][k] = map[corev1.ResourceName]uint64{}
			}
			m.reusable[uid][k][b.Type] = max(m.reusable[uid][k][b.Type], b.Size)
		}
		return
	}
	for _, b := range blocks {
		k := maskOf(b.NUMAAffinity)
		if r := m.reusable[uid][k][b.Type]; r != 0 {
			m.reusable[uid][k][b.Type] = r - min(r, b.Size)
		}
	}
}

// takeFromInitLocked shrinks the blocks of the init containers before c on the same nodes by
// what c reuses of them, so the memory is counted once (updateInitContainersMemoryBlocks).
func (m *Manager) takeFromInitLocked(pod *corev1.Pod, c *corev1.Container, blocks []Block) {
	uid := string(pod.UID)
	for _, cb := range blocks {
		size := cb.Size
		for i := range pod.Spec.InitContainers {
			ic := &pod.Spec.InitContainers[i]
			if ic.Name == c.Name || size == 0 {
				break
			}
			if restartable(ic) {
				continue
			}
			ib := m.state.assignments[uid][ic.Name]
			for j := range ib {
				b := &ib[j]
				if b.Size == 0 || b.Type != cb.Type || maskOf(b.NUMAAffinity) != maskOf(cb.NUMAAffinity) {
					continue
				}
				take := min(b.Size, size)
				b.Size -= take
				size -= take
			}
		}
	}
}

func regularInit(pod *corev1.Pod, c *corev1.Container) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return !restartable(&pod.Spec.InitContainers[i])
		}
	}
	return false
}

// Admit is the admission under --topology-manager-policy=none: every container allocated with no
// affinity chosen, as the kubelet's admitPolicyNone; a failure refuses the pod as the kubelet
// does (UnexpectedAdmissionError) and gives back what was allocated.
func (m *Manager) Admit(pod *corev1.Pod) (bool, string, string) {
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if err := m.Allocate(pod, &cs[i], 0); err != nil {
				m.Release(pod)
				return false, "UnexpectedAdmissionError", fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)
			}
		}
	}
	return true, "", ""
}

// Release gives back the memory of a pod refused at admission.
func (m *Manager) Release(pod *corev1.Pod) {
	if !m.Static() {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	uid := string(pod.UID)
	for name := range m.state.assignments[uid] {
		m.removeLocked(uid, name)
	}
	delete(m.fresh, uid)
	_ = m.state.save()
}

// CpusetMems is the cpuset.mems c of pod is created with: the NUMA nodes of its blocks, "" (the
// runtime's default) when it has none, as the kubelet's PreCreateContainer. A regular container
// about to start ends its pod's init containers' assignments (the kubelet's AddContainer).
func (m *Manager) CpusetMems(pod *corev1.Pod, c *corev1.Container) string {
	if !m.Static() {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	uid := string(pod.UID)
	nodes := map[int]bool{}
	for _, b := range m.state.assignments[uid][c.Name] {
		for _, n := range b.NUMAAffinity {
			nodes[n] = true
		}
	}
	removed := false
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		if ic.Name == c.Name {
			break
		}
		if !restartable(ic) && m.state.assignments[uid][ic.Name] != nil {
			m.removeLocked(uid, ic.Name)
			removed = true
		}
	}
	if removed {
		_ = m.state.save()
	}
	var ids []int
	for n := range nodes {
		ids = append(ids, n)
	}
	slices.Sort(ids)
	var s []string
	for _, n := range ids {
		s = append(s, strconv.Itoa(n))
	}
	return strings.Join(s, ",")
}

// removeLocked gives a container's blocks back to their nodes (the kubelet's RemoveContainer).
func (m *Manager) removeLocked(uid, name string) {
	blocks := m.state.assignments[uid][name]
	if blocks == nil {
		return
	}
	delete(m.state.assignments[uid], name)
	if len(m.state.assignments[uid]) == 0 {
		delete(m.state.assignments, uid)
	}
	ms := m.state.machine
	for _, b := range blocks {
		size := b.Size
		for _, id := range b.NUMAAffinity {
			ms[id].NumberOfAssignments--
			if ms[id].NumberOfAssignments == 0 {
				ms[id].Cells = []int{id}
			}
			t := ms[id].MemoryMap[b.Type]
			if size == 0 || t.Reserved == 0 {
				continue
			}
			give := min(size, t.Reserved)
			t.Free += give
			t.Reserved -= give
			size -= give
		}
	}
}

// removeStaleLocked gives back the memory of pods no longer active, once every source has been
// read; pods given memory since the last reconcile are kept.
func (m *Manager) removeStaleLocked(active map[types.UID]bool) bool {
	if m.o.Ready != nil && !m.o.Ready() {
		return false
	}
	changed := false
	for uid, cs := range m.state.assignments {
		if active[types.UID(uid)] || m.fresh[uid] {
			continue
		}
		for name := range cs {
			m.removeLocked(uid, name)
		}
		changed = true
	}
	if changed {
		_ = m.state.save()
	}
	return changed
}

// Reconcile gives back the memory of the pods gone.
func (m *Manager) Reconcile() {
	if !m.Static() {
		return
	}
	active := m.o.ActivePods()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.removeStaleLocked(active)
	clear(m.fresh)
}

// Run reconciles every ReconcilePeriod on the clock until ctx ends; under None it only waits.
func (m *Manager) Run(ctx context.Context) error {
	if !m.Static() {
		<-ctx.Done()
		return ctx.Err()
	}
	return periodic.Until(ctx, m.o.Clock, m.o.ReconcilePeriod, func(context.Context) { m.Reconcile() })
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
			req, ok := c.Resources.Requests[name]
			if !ok {
				req = limit
			}
			if req.Cmp(limit) != 0 {
				return false
			}
		}
	}
	return len(all) > 0
}
