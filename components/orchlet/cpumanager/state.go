package cpumanager

import (
	"fmt"

	"k8s.io/utils/cpuset"

	"orch.io/orch/components/orchlet/statefile"
)

// StateFile is the checkpoint's name under --root-dir, the kubelet's.
const StateFile = "cpu_manager_state"

// checkpoint is the kubelet's CPUManagerCheckpoint (v2): the shared pool, and each pod's
// containers' exclusive CPUs.
type checkpoint struct {
	PolicyName    string                       `json:"policyName"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries,omitempty"`
	Checksum      uint32                       `json:"checksum"`
}

// sum is the kubelet's checksum of a checkpoint, over its state.CPUManagerCheckpoint with the
// checksum zeroed, so either agent can read the other's file.
func (c checkpoint) sum() uint32 {
	c.Checksum = 0
	if c.Entries == nil {
		c.Entries = map[string]map[string]string{}
	}
	return statefile.Sum(&c, "(*cpumanager.checkpoint)", "(*state.CPUManagerCheckpoint)")
}

// Verified is the kubelet's VerifyChecksum: a checkpoint without a checksum, as an old one, passes.
func (c *checkpoint) Verified() bool { return c.Checksum == 0 || c.Checksum == c.sum() }

// state is the CPU manager's assignments, kept in memory and written through to the checkpoint.
type state struct {
	path        string
	policy      string
	defaultSet  cpuset.CPUSet
	assignments map[string]map[string]cpuset.CPUSet // pod UID -> container -> CPUs
}

// loadState reads the checkpoint at path; a missing one is a fresh state. A checkpoint of another
// policy, or one that does not verify, is an error, as in Kubernetes, which asks for the file to
// be removed (draining the node first) when the policy changes.
func loadState(path, policy string) (*state, bool, error) {
	s := &state{path: path, policy: policy, assignments: map[string]map[string]cpuset.CPUSet{}}
	var cp checkpoint
	found, err := statefile.Read(path, &cp)
	if err != nil {
		return nil, false, fmt.Errorf("could not restore state from checkpoint %s: %w", path, err)
	}
	if !found {
		return s, false, nil
	}
	if cp.PolicyName != policy {
		return nil, false, fmt.Errorf("could not restore state from checkpoint %s: configured policy %q differs from state checkpoint policy %q; drain the node and remove the file", path, policy, cp.PolicyName)
	}
	if s.defaultSet, err = cpuset.Parse(cp.DefaultCPUSet); err != nil {
		return nil, false, fmt.Errorf("could not restore state from checkpoint %s: defaultCpuSet %q: %w", path, cp.DefaultCPUSet, err)
	}
	for pod, cs := range cp.Entries {
		s.assignments[pod] = map[string]cpuset.CPUSet{}
		for c, v := range cs {
			set, err := cpuset.Parse(v)
			if err != nil {
				return nil, false, fmt.Errorf("could not restore state from checkpoint %s: entries[%s][%s] %q: %w", path, pod, c, v, err)
			}
			s.assignments[pod][c] = set
		}
	}
	return s, true, nil
}

// save writes the checkpoint through a temporary file, so a crash leaves the old one or the new.
func (s *state) save() error {
	cp := checkpoint{PolicyName: s.policy, DefaultCPUSet: s.defaultSet.String(), Entries: map[string]map[string]string{}}
	for pod, cs := range s.assignments {
		cp.Entries[pod] = map[string]string{}
		for c, set := range cs {
			cp.Entries[pod][c] = set.String()
		}
	}
	cp.Checksum = cp.sum()
	return statefile.WriteJSON(s.path, cp)
}

// assigned is every CPU some container holds exclusively.
func (s *state) assigned() cpuset.CPUSet {
	all := cpuset.New()
	for _, cs := range s.assignments {
		for _, set := range cs {
			all = all.Union(set)
		}
	}
	return all
}
