package memorymanager

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/orchlet/statefile"
)

// StateFile is the checkpoint's name under --root-dir, the kubelet's.
const StateFile = "memory_manager_state"

// The checkpoint's types carry the kubelet's names (state.MemoryTable, ...) because its checksum
// is taken over their rendering, type names included: either agent reads the other's file.

// MemoryTable is one memory type's account on one NUMA node.
type MemoryTable struct {
	TotalMemSize   uint64 `json:"total"`
	SystemReserved uint64 `json:"systemReserved"`
	Allocatable    uint64 `json:"allocatable"`
	Reserved       uint64 `json:"reserved"`
	Free           uint64 `json:"free"`
}

// NUMANodeState is one NUMA node's memory and the group of nodes (Cells) it is allocated with.
type NUMANodeState struct {
	NumberOfAssignments int                                  `json:"numberOfAssignments"`
	MemoryMap           map[corev1.ResourceName]*MemoryTable `json:"memoryMap"`
	Cells               []int                                `json:"cells"`
}

// NUMANodeMap is every NUMA node's state.
type NUMANodeMap map[int]*NUMANodeState

// Clone is a deep copy.
func (nm NUMANodeMap) Clone() NUMANodeMap {
	out := NUMANodeMap{}
	for id, s := range nm {
		c := &NUMANodeState{NumberOfAssignments: s.NumberOfAssignments, Cells: append([]int{}, s.Cells...), MemoryMap: map[corev1.ResourceName]*MemoryTable{}}
		for name, t := range s.MemoryMap {
			tc := *t
			c.MemoryMap[name] = &tc
		}
		out[id] = c
	}
	return out
}

// Block is memory of one type given to a container from a set of NUMA nodes.
type Block struct {
	NUMAAffinity []int               `json:"numaAffinity"`
	Type         corev1.ResourceName `json:"type"`
	Size         uint64              `json:"size"`
}

// ContainerMemoryAssignments are the blocks of each pod's containers, by pod UID and name.
type ContainerMemoryAssignments map[string]map[string][]Block

// MemoryManagerCheckpoint is the file's content.
type MemoryManagerCheckpoint struct {
	PolicyName   string                     `json:"policyName"`
	MachineState NUMANodeMap                `json:"machineState"`
	Entries      ContainerMemoryAssignments `json:"entries,omitempty"`
	Checksum     uint32                     `json:"checksum"`
}

// sum is the kubelet's checksum over its checkpoint with the checksum zeroed, this package's name
// spelt as the kubelet's (state).
func (c MemoryManagerCheckpoint) sum() uint32 {
	c.Checksum = 0
	return statefile.Sum(&c, "memorymanager.", "state.")
}

// Verified is the kubelet's VerifyChecksum.
func (c *MemoryManagerCheckpoint) Verified() bool { return c.Checksum == c.sum() }

// state is the manager's machine state and assignments, written through to the checkpoint.
type state struct {
	path        string
	policy      string
	machine     NUMANodeMap
	assignments ContainerMemoryAssignments
}

// loadState reads the checkpoint at path; a missing one is a fresh state (written at once, as
// the kubelet writes it). A checkpoint of another policy, or one that does not verify, is refused
// with the kubelet's advice.
func loadState(path, policy string) (*state, error) {
	s := &state{path: path, policy: policy, machine: NUMANodeMap{}, assignments: ContainerMemoryAssignments{}}
	refuse := func(err error) (*state, error) {
		return nil, fmt.Errorf("could not restore state from checkpoint: %v, please drain this node and delete the memory manager checkpoint file %q before restarting orchlet", err, path)
	}
	// As the kubelet's NewMemoryManagerCheckpoint: empty maps, which the file omits when empty
	// and the checksum renders as such.
	cp := MemoryManagerCheckpoint{MachineState: NUMANodeMap{}, Entries: ContainerMemoryAssignments{}}
	found, err := statefile.Read(path, &cp)
	if err != nil {
		return refuse(err)
	}
	if !found {
		if err := s.save(); err != nil {
			return refuse(err)
		}
		return s, nil
	}
	if cp.PolicyName != policy {
		return refuse(fmt.Errorf("[memorymanager] configured policy %q differs from state checkpoint policy %q", policy, cp.PolicyName))
	}
	s.machine, s.assignments = cp.MachineState, cp.Entries
	return s, nil
}

// save writes the checkpoint through a temporary file, so a crash leaves the old one or the new.
func (s *state) save() error {
	cp := MemoryManagerCheckpoint{PolicyName: s.policy, MachineState: s.machine, Entries: s.assignments}
	cp.Checksum = cp.sum()
	return statefile.WriteJSON(s.path, cp)
}
