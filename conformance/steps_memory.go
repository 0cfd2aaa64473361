package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// memorySteps check the memory manager (--memory-manager-policy) as an operator sees it: the
// cpuset.mems the runtime created a container with, and the kubelet's checkpoint file in the
// agent's --root-dir.
func memorySteps() []StepDef {
	return []StepDef{
		{`^the runtime's container "([^"]*)" of pod "([^"]*)" has cpuset.mems "([^"]*)"$`, func(w *World) any { return w.containerCpusetMems }},
		{`^the runtime's container "([^"]*)" of pod "([^"]*)" has no cpuset.mems$`, func(w *World) any {
			return func(container, pod string) error { return w.containerCpusetMems(container, pod, "") }
		}},
		{`^the memory manager's checkpoint "([^"]*)" of policy "([^"]*)" gives the container "([^"]*)" (\d+) bytes of memory on NUMA nodes "([^"]*)"$`, func(w *World) any { return w.memoryCheckpointAssigns }},
	}
}

func (w *World) containerCpusetMems(container, pod, want string) error {
	return eventually(settle, func() error {
		cfg, err := w.containerConfig(container, pod)
		if err != nil {
			return err
		}
		if got := cfg.GetLinux().GetResources().GetCpusetMems(); got != want {
			return errStop{fmt.Errorf("container %s of pod %s has cpuset.mems %q, want %q", container, pod, got, want)}
		}
		return nil
	})
}

// memoryCheckpointAssigns reads the checkpoint in the kubelet's format (policyName, machineState,
// entries by pod UID and container name, checksum): the one container of that name holds one
// block of memory of that size on those nodes.
func (w *World) memoryCheckpointAssigns(path, policy, container string, size uint64, nodes string) error {
	data, err := os.ReadFile(w.expandDir(path))
	if err != nil {
		return err
	}
	var cp struct {
		PolicyName   string                     `json:"policyName"`
		MachineState map[string]json.RawMessage `json:"machineState"`
		Entries      map[string]map[string][]struct {
			NUMAAffinity []int  `json:"numaAffinity"`
			Type         string `json:"type"`
			Size         uint64 `json:"size"`
		} `json:"entries"`
		Checksum *uint64 `json:"checksum"`
	}
	if err := json.Unmarshal(data, &cp); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if cp.PolicyName != policy || cp.Checksum == nil || len(cp.MachineState) == 0 {
		return fmt.Errorf("%s: policy %q, checksum %v, %d NUMA nodes in the machine state; want policy %q, a checksum and the nodes:\n%s",
			path, cp.PolicyName, cp.Checksum, len(cp.MachineState), policy, data)
	}
	var want []int
	for _, n := range strings.Split(nodes, ",") {
		id, err := strconv.Atoi(n)
		if err != nil {
			return fmt.Errorf("NUMA nodes %q: %w", nodes, err)
		}
		want = append(want, id)
	}
	var found []string
	for pod, cs := range cp.Entries {
		for _, b := range cs[container] {
			if b.Type == "memory" {
				found = append(found, pod)
				if b.Size != size || !slices.Equal(b.NUMAAffinity, want) {
					return fmt.Errorf("%s: container %s of pod %s has %d bytes of memory on NUMA nodes %v, want %d on %v", path, container, pod, b.Size, b.NUMAAffinity, size, want)
				}
			}
		}
	}
	if len(found) != 1 {
		return fmt.Errorf("%s: %d pods hold memory for a container %s, want 1:\n%s", path, len(found), container, data)
	}
	return nil
}
