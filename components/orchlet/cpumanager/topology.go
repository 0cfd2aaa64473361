package cpumanager

import (
	"fmt"
	"io/fs"
	"orch.io/orch/components/orchlet/topologymanager"
	"path"
	"slices"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"
)

// CPUInfo places one logical CPU. Core is the lowest CPU id among the core's threads, unique on
// the machine, as the kubelet numbers cores.
type CPUInfo struct {
	ID, Core, Socket, NUMANode int
}

// ReadDistances reads the NUMA nodes' distances from sysfs, fsys being its devices/system/node
// directory: node<N>/distance, one distance to each node in order. A machine without it (no NUMA)
// has none.
func ReadDistances(fsys fs.FS) (topologymanager.Distances, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, nil
	}
	d := topologymanager.Distances{}
	for _, e := range entries {
		n, ok := strings.CutPrefix(e.Name(), "node")
		id, err := strconv.Atoi(n)
		if !ok || err != nil {
			continue
		}
		data, err := fs.ReadFile(fsys, path.Join(e.Name(), "distance"))
		if err != nil {
			return nil, fmt.Errorf("reading the NUMA distances: %w", err)
		}
		for _, f := range strings.Fields(string(data)) {
			v, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("reading the NUMA distances: node%d/distance %q: %w", id, data, err)
			}
			d[id] = append(d[id], v)
		}
	}
	return d, nil
}

// Topology is the machine's logical CPUs, by id.
type Topology struct {
	// Distances are the NUMA nodes' distances (ReadDistances), for prefer-closest-numa-nodes.
	Distances topologymanager.Distances
	CPUs      []CPUInfo
}

// All is every CPU.
func (t *Topology) All() cpuset.CPUSet {
	ids := make([]int, len(t.CPUs))
	for i, c := range t.CPUs {
		ids[i] = c.ID
	}
	return cpuset.New(ids...)
}

func (t *Topology) info(id int) (CPUInfo, bool) {
	i, ok := slices.BinarySearchFunc(t.CPUs, id, func(c CPUInfo, id int) int { return c.ID - id })
	if !ok {
		return CPUInfo{}, false
	}
	return t.CPUs[i], true
}

// NUMANodes are the NUMA nodes of the CPUs, in order.
func (t *Topology) NUMANodes() []int {
	var out []int
	for _, c := range t.CPUs {
		if !slices.Contains(out, c.NUMANode) {
			out = append(out, c.NUMANode)
		}
	}
	slices.Sort(out)
	return out
}

// cpusPer counts the CPUs of one core and of one socket (the first of each).
func (t *Topology) cpusPer() (core, socket int) {
	if len(t.CPUs) == 0 {
		return 1, 1
	}
	first := t.CPUs[0]
	for _, c := range t.CPUs {
		if c.Core == first.Core {
			core++
		}
		if c.Socket == first.Socket {
			socket++
		}
	}
	return core, socket
}

// Discover reads the topology of the online CPUs from sysfs, fsys being its devices/system/cpu
// directory: online, cpuN/topology/{core_id,physical_package_id} and the cpuN/nodeM links.
func Discover(fsys fs.FS) (*Topology, error) {
	online, err := fs.ReadFile(fsys, "online")
	if err != nil {
		return nil, fmt.Errorf("reading the CPU topology: %w", err)
	}
	set, err := cpuset.Parse(strings.TrimSpace(string(online)))
	if err != nil {
		return nil, fmt.Errorf("reading the CPU topology: online %q: %w", online, err)
	}
	readInt := func(p string) (int, error) {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return 0, fmt.Errorf("reading the CPU topology: %w", err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return 0, fmt.Errorf("reading the CPU topology: %s: %w", p, err)
		}
		return n, nil
	}
	type coreKey struct{ socket, core int }
	lowest := map[coreKey]int{}
	t := &Topology{}
	for _, id := range set.List() {
		dir := "cpu" + strconv.Itoa(id)
		core, err := readInt(path.Join(dir, "topology", "core_id"))
		if err != nil {
			return nil, err
		}
		socket, err := readInt(path.Join(dir, "topology", "physical_package_id"))
		if err != nil {
			return nil, err
		}
		node := 0 // a machine without NUMA has no node links: one node
		entries, err := fs.ReadDir(fsys, dir)
		if err != nil {
			return nil, fmt.Errorf("reading the CPU topology: %w", err)
		}
		for _, e := range entries {
			if n, ok := strings.CutPrefix(e.Name(), "node"); ok {
				if v, err := strconv.Atoi(n); err == nil {
					node = v
				}
			}
		}
		k := coreKey{socket, core}
		if low, ok := lowest[k]; !ok || id < low {
			lowest[k] = id
		}
		t.CPUs = append(t.CPUs, CPUInfo{ID: id, Core: core, Socket: socket, NUMANode: node})
	}
	for i, c := range t.CPUs {
		t.CPUs[i].Core = lowest[coreKey{c.Socket, c.Core}]
	}
	if len(t.CPUs) == 0 {
		return nil, fmt.Errorf("reading the CPU topology: no CPU online")
	}
	return t, nil
}
