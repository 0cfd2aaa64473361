package memorymanager

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/topologymanager"
)

const gi = 1 << 30

// twoNodes is a machine of two NUMA nodes of 4Gi each, node 0 with two 1Gi huge pages.
var twoNodes = []Node{{ID: 0, Memory: 4 * gi, HugePages: []HugePages{{PageSizeKiB: 1 << 20, NumPages: 2}}}, {ID: 1, Memory: 4 * gi}}

func reservation(node int32, limits ...string) v1beta1.MemoryReservation {
	r := v1beta1.MemoryReservation{NumaNode: node, Limits: corev1.ResourceList{}}
	for i := 0; i < len(limits); i += 2 {
		r.Limits[corev1.ResourceName(limits[i])] = resource.MustParse(limits[i+1])
	}
	return r
}

func newStatic(t *testing.T, dir string, active map[types.UID]bool) *Manager {
	t.Helper()
	m, err := New(Options{
		Policy: PolicyStatic, Nodes: twoNodes, RootDir: dir, Clock: clock.NewMock(), ReconcilePeriod: 10 * time.Second,
		NodeReservation: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		Reserved:        []v1beta1.MemoryReservation{reservation(0, "memory", "512Mi"), reservation(1, "memory", "512Mi")},
		ActivePods:      func() map[types.UID]bool { return active },
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func guaranteedPod(uid string, memory string, more ...string) *corev1.Pod {
	limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse(memory)}
	for i := 0; i < len(more); i += 2 {
		limits[corev1.ResourceName(more[i])] = resource.MustParse(more[i+1])
	}
	return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: limits}}}}}
}

func withUID(p *corev1.Pod, uid string) *corev1.Pod { p.UID = types.UID(uid); return p }

// The kubelet's validation of --reserved-memory (memory_manager_test's TestValidateReservedMemory
// and NewManager's cases): the totals per type equal node allocatable's reservation, every node
// named exists, and the Static policy needs memory reserved.
func TestReservedMemoryValidation(t *testing.T) {
	mem := func(q string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}
	}
	for _, tc := range []struct {
		name        string
		allocatable corev1.ResourceList
		reserved    []v1beta1.MemoryReservation
		want        string
	}{
		{"totals equal", mem("1Gi"), []v1beta1.MemoryReservation{reservation(0, "memory", "512Mi"), reservation(1, "memory", "512Mi")}, ""},
		{"node allocatable reserves more", mem("2Gi"), []v1beta1.MemoryReservation{reservation(0, "memory", "1Gi")},
			`the total amount "1Gi" of type "memory" is not equal to the value "2Gi" determined by Node Allocatable feature`},
		{"huge pages reserved without node allocatable's", mem("1Gi"), []v1beta1.MemoryReservation{reservation(0, "memory", "1Gi", "hugepages-1Gi", "1Gi")},
			`the total amount "1Gi" of type "hugepages-1Gi" is not equal to the value "0" determined by Node Allocatable feature`},
		{"no such node", mem("1Gi"), []v1beta1.MemoryReservation{reservation(2, "memory", "1Gi")},
			"the reserved memory configuration references a NUMA node 2 that does not exist on this machine"},
		{"nothing reserved", nil, nil, "[memorymanager] you should specify the system reserved memory"},
	} {
		_, err := New(Options{Policy: PolicyStatic, Nodes: twoNodes, RootDir: t.TempDir(), NodeReservation: tc.allocatable, Reserved: tc.reserved,
			Clock: clock.NewMock(), ReconcilePeriod: time.Second, ActivePods: func() map[types.UID]bool { return nil }})
		if (tc.want == "" && err != nil) || (tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want))) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := New(Options{Policy: PolicyNone, Reserved: []v1beta1.MemoryReservation{reservation(0, "memory", "1Gi")}, RootDir: t.TempDir()}); err == nil ||
		!strings.Contains(err.Error(), "--reserved-memory (reservedMemory): it acts only with --memory-manager-policy=Static") {
		t.Errorf("None with --reserved-memory: %v", err)
	}
}

// The default machine state (getDefaultMachineState): a node's memory less its reservation and
// its huge pages; each huge page size its own table.
func TestDefaultMachineState(t *testing.T) {
	m := newStatic(t, t.TempDir(), nil)
	ms := m.state.machine
	if got := *ms[0].MemoryMap[corev1.ResourceMemory]; got != (MemoryTable{TotalMemSize: 4 * gi, SystemReserved: gi / 2, Allocatable: 4*gi - gi/2 - 2*gi, Free: 4*gi - gi/2 - 2*gi}) {
		t.Errorf("node 0 memory %+v", got)
	}
	if got := *ms[0].MemoryMap["hugepages-1Gi"]; got != (MemoryTable{TotalMemSize: 2 * gi, Allocatable: 2 * gi, Free: 2 * gi}) {
		t.Errorf("node 0 huge pages %+v", got)
	}
	if got := ms[1].MemoryMap[corev1.ResourceMemory].Free; got != 4*gi-gi/2 {
		t.Errorf("node 1 free %d", got)
	}
}

// Hints as the static policy's calculateHints gives them, and what single-numa-node makes of them
// merged: a pod that one node holds is hinted there, preferred; one that needs both is hinted
// both, and single-numa-node refuses it.
func TestHintsAndSingleNUMANode(t *testing.T) {
	m := newStatic(t, t.TempDir(), nil)
	nodes := []int{0, 1}
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		want  [][]topologymanager.Hint
		admit bool
	}{
		{"fits node 1 only (node 0's memory is huge pages)", guaranteedPod("a", "3Gi"),
			[][]topologymanager.Hint{{{Affinity: topologymanager.MaskOf(1), Preferred: true}, {Affinity: topologymanager.MaskOf(0, 1)}}}, true},
		{"fits no single node", guaranteedPod("b", "5Gi"),
			[][]topologymanager.Hint{{{Affinity: topologymanager.MaskOf(0, 1), Preferred: true}}}, false},
		{"memory and huge pages", guaranteedPod("c", "1Gi", "hugepages-1Gi", "1Gi"),
			[][]topologymanager.Hint{{{Affinity: topologymanager.MaskOf(0), Preferred: true}, {Affinity: topologymanager.MaskOf(0, 1)}},
				{{Affinity: topologymanager.MaskOf(0), Preferred: true}, {Affinity: topologymanager.MaskOf(0, 1)}}}, true},
	} {
		got := m.Hints(tc.pod, &tc.pod.Spec.Containers[0])
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, got, tc.want)
		}
		for i := range got {
			if len(got[i]) != len(tc.want[i]) {
				t.Fatalf("%s: %v, want %v", tc.name, got, tc.want)
			}
			for j := range got[i] {
				if got[i][j] != tc.want[i][j] {
					t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
				}
			}
		}
		if _, admit := topologymanager.Merge(topologymanager.PolicySingleNUMANode, nodes, got); admit != tc.admit {
			t.Errorf("%s: single-numa-node admits %v, want %v", tc.name, admit, tc.admit)
		}
	}
	burstable := guaranteedPod("d", "1Gi")
	burstable.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}
	if got := m.Hints(burstable, &burstable.Spec.Containers[0]); got != nil {
		t.Errorf("a Burstable pod has no preference, got %v", got)
	}
}

// Allocation with the merged hint, the checkpoint restored by the next agent, cpuset.mems from the
// blocks, the machine state given back when the pod is gone, and a checkpoint that no longer
// matches the machine refused.
func TestAllocateRestoreRelease(t *testing.T) {
	dir := t.TempDir()
	active := map[types.UID]bool{"p1": true}
	m := newStatic(t, dir, active)
	pod := withUID(guaranteedPod("p1", "1Gi"), "p1")
	if err := m.Allocate(pod, &pod.Spec.Containers[0], topologymanager.MaskOf(1)); err != nil {
		t.Fatal(err)
	}
	if got := m.CpusetMems(pod, &pod.Spec.Containers[0]); got != "1" {
		t.Errorf("cpuset.mems %q, want 1", got)
	}
	if ms := m.state.machine[1]; ms.NumberOfAssignments != 1 || ms.MemoryMap[corev1.ResourceMemory].Reserved != gi {
		t.Errorf("node 1 after allocation %+v %+v", ms, ms.MemoryMap[corev1.ResourceMemory])
	}
	// With no hint chosen (topology policy none) the narrowest preferred node: node 0 has 1.5Gi.
	other := withUID(guaranteedPod("p2", "1Gi"), "p2")
	if ok, reason, msg := m.Admit(other); !ok {
		t.Fatalf("admit: %s %s", reason, msg)
	}
	if got := m.CpusetMems(other, &other.Spec.Containers[0]); got != "0" {
		t.Errorf("default hint: cpuset.mems %q, want 0", got)
	}
	// Too much for the machine: refused as the kubelet refuses it.
	huge := withUID(guaranteedPod("p3", "9Gi"), "p3")
	if ok, reason, msg := m.Admit(huge); ok || reason != "UnexpectedAdmissionError" || !strings.Contains(msg, "no NUMA nodes with enough memory is available") {
		t.Errorf("9Gi: %v %s %s", ok, reason, msg)
	}

	// The next agent restores it.
	m2 := newStatic(t, dir, active)
	if got := m2.CpusetMems(pod, &pod.Spec.Containers[0]); got != "1" {
		t.Errorf("restored cpuset.mems %q", got)
	}
	// p2 is not active: the reconcile after it was fresh gives its memory back.
	m2.Reconcile()
	m2.Reconcile()
	if _, ok := m2.state.assignments["p2"]; ok {
		t.Errorf("p2's memory not given back: %v", m2.state.assignments)
	}
	if got := m2.state.machine[0].MemoryMap[corev1.ResourceMemory]; got.Reserved != 0 || got.Free != got.Allocatable || m2.state.machine[0].NumberOfAssignments != 0 {
		t.Errorf("node 0 after release %+v", got)
	}

	// A machine that changed under the checkpoint is refused by name.
	path := filepath.Join(dir, StateFile)
	_, err := New(Options{Policy: PolicyStatic, Nodes: twoNodes[:1], RootDir: dir, Clock: clock.NewMock(), ReconcilePeriod: time.Second,
		NodeReservation: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
		Reserved:        []v1beta1.MemoryReservation{reservation(0, "memory", "512Mi")}, ActivePods: func() map[types.UID]bool { return nil }})
	if err == nil || !strings.Contains(err.Error(), "the memory assignment uses the NUMA that does not exist") || !strings.Contains(err.Error(), path) {
		t.Errorf("changed machine: %v", err)
	}
	// The policy changed: refused, and the file left as it was.
	before, _ := os.ReadFile(path)
	if _, err := New(Options{Policy: PolicyNone, RootDir: dir}); err == nil || !strings.Contains(err.Error(), `configured policy "None" differs from state checkpoint policy "Static"`) {
		t.Errorf("policy changed: %v", err)
	}
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("the refused start rewrote the checkpoint")
	}
}

// An init container's memory is reused by the container after it, and its assignment ends when
// that container starts (the kubelet's reusable memory and AddContainer).
func TestInitContainerMemoryReused(t *testing.T) {
	m := newStatic(t, t.TempDir(), map[types.UID]bool{"p": true})
	pod := withUID(guaranteedPod("p", "2Gi"), "p")
	init := pod.Spec.Containers[0]
	init.Name = "init"
	pod.Spec.InitContainers = []corev1.Container{init}
	if ok, reason, msg := m.Admit(pod); !ok {
		t.Fatalf("%s %s", reason, msg)
	}
	if got := m.state.machine[1].MemoryMap[corev1.ResourceMemory].Reserved; got != 2*gi {
		t.Errorf("reserved %d, want 2Gi counted once", got)
	}
	m.CpusetMems(pod, &pod.Spec.Containers[0])
	if _, ok := m.state.assignments["p"]["init"]; ok {
		t.Errorf("the init container's assignment stays: %v", m.state.assignments)
	}
}

// The pod scope's hints are for the pod's memory together (getPodRequestedResources): two
// containers of 2Gi need 4Gi, which only both nodes hold; an init container larger than them counts
// instead.
func TestPodScopeHints(t *testing.T) {
	m := newStatic(t, t.TempDir(), nil)
	p := guaranteedPod("p", "2Gi")
	second := p.Spec.Containers[0]
	second.Name = "second"
	p.Spec.Containers = append(p.Spec.Containers, second)
	if got := m.Hints(p, nil); len(got) != 1 || len(got[0]) != 1 || got[0][0] != (topologymanager.Hint{Affinity: topologymanager.MaskOf(0, 1), Preferred: true}) {
		t.Errorf("two containers of 2Gi: %v, want both nodes", got)
	}
	small := guaranteedPod("q", "1Gi")
	init := guaranteedPod("q", "3Gi").Spec.Containers[0]
	init.Name = "init"
	small.Spec.InitContainers = []corev1.Container{init}
	if got := m.Hints(small, nil); len(got) != 1 || got[0][0] != (topologymanager.Hint{Affinity: topologymanager.MaskOf(1), Preferred: true}) {
		t.Errorf("an init container of 3Gi: %v, want node 1 (node 0 has 1.5Gi)", got)
	}
}

// pinning is the manager's pinning requests and errors as /metrics serves them.
func pinning(t *testing.T, m *Manager) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mf := range mfs {
		out = append(out, fmt.Sprintf("%s %v", mf.GetName(), mf.GetMetric()[0].GetCounter().GetValue()))
	}
	return strings.Join(out, ", ")
}

// Each allocation for a container of a Guaranteed pod under Static is a pinning request, one
// that fails also a pinning error, a container already holding memory a request again, and
// nothing else counts, as the kubelet's memory_manager_pinning_requests_total and
// memory_manager_pinning_errors_total; under None both are served at 0.
func TestPinningMetrics(t *testing.T) {
	none, err := New(Options{Policy: PolicyNone})
	if err != nil {
		t.Fatal(err)
	}
	const zero = "orchlet_memory_manager_pinning_errors_total 0, orchlet_memory_manager_pinning_requests_total 0"
	if got := pinning(t, none); got != zero {
		t.Errorf("under None: %s", got)
	}
	m := newStatic(t, t.TempDir(), map[types.UID]bool{"p1": true, "p2": true})
	burstable := withUID(guaranteedPod("b", "1Gi"), "b")
	burstable.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}
	if ok, _, _ := m.Admit(burstable); !ok {
		t.Fatal("a Burstable pod refused")
	}
	if got := pinning(t, m); got != zero {
		t.Errorf("a Burstable pod counted: %s", got)
	}
	fits := withUID(guaranteedPod("p1", "1Gi"), "p1")
	if ok, reason, msg := m.Admit(fits); !ok {
		t.Fatalf("admit: %s %s", reason, msg)
	}
	if err := m.Allocate(fits, &fits.Spec.Containers[0], 0); err != nil { // held already
		t.Fatal(err)
	}
	if ok, _, _ := m.Admit(withUID(guaranteedPod("p2", "9Gi"), "p2")); ok {
		t.Fatal("9Gi admitted")
	}
	if got, want := pinning(t, m), "orchlet_memory_manager_pinning_errors_total 1, orchlet_memory_manager_pinning_requests_total 3"; got != want {
		t.Errorf("%s, want %s", got, want)
	}
}
