package cpumanager

import (
	"fmt"
	"io/fs"
	"math/bits"
	"path"
	"slices"
	"strconv"
	"strings"

	"orch.io/orch/components/orchlet/topologymanager"

	"k8s.io/utils/cpuset"
)

// CPUInfo places one logical CPU. Core is the lowest CPU id among the core's threads, unique on
// the machine, as the kubelet numbers cores. UncoreCache is the id of the last-level cache the
// CPU shares with part of its NUMA node only (a split L3), else its socket, as cadvisor and the
// kubelet read it.
type CPUInfo struct {
	ID, Core, Socket, NUMANode, UncoreCache int
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

// Discover reads the topology of the online CPUs from sysfs, fsys being its devices/system/cpu
// directory: online, cpuN/topology/{core_id,physical_package_id}, the cpuN/nodeM links and the
// caches cpuN/cache/indexM/{level,id,shared_cpu_map}.
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
	if err := readUncoreCaches(fsys, t); err != nil {
		return nil, err
	}
	return t, nil
}

// readUncoreCaches sets each CPU's uncore cache as cadvisor finds it: the first cache above level
// 2 of the CPU's core shared by fewer CPUs than the core's NUMA node has (a cache shared by the
// whole node is the node's); without one, the socket. A CPU without a cache directory (a machine
// or fixture that does not describe them) has the socket too.
func readUncoreCaches(fsys fs.FS, t *Topology) error {
	threads, nodeCores := map[int]int{}, map[int]map[int]bool{}
	for _, c := range t.CPUs {
		threads[c.Core]++
		if nodeCores[c.NUMANode] == nil {
			nodeCores[c.NUMANode] = map[int]bool{}
		}
		nodeCores[c.NUMANode][c.Core] = true
	}
	readIn := func(p string, base int) (int, error) {
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return 0, fmt.Errorf("reading the CPU caches: %w", err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), base, 64)
		if err != nil {
			return 0, fmt.Errorf("reading the CPU caches: %s: %w", p, err)
		}
		return int(n), nil
	}
	for i, c := range t.CPUs {
		t.CPUs[i].UncoreCache = c.Socket
		// The caches are read from the core's first thread, as cadvisor reads them.
		dir := path.Join("cpu"+strconv.Itoa(c.Core), "cache")
		entries, err := fs.ReadDir(fsys, dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), "index") {
				continue
			}
			idx := path.Join(dir, e.Name())
			level, err := readIn(path.Join(idx, "level"), 10)
			if err != nil {
				return err
			}
			if level <= 2 {
				continue
			}
			shared, err := sharedCPUs(fsys, path.Join(idx, "shared_cpu_map"))
			if err != nil {
				return err
			}
			if shared == len(nodeCores[c.NUMANode])*threads[c.Core] {
				continue // the node's cache
			}
			id, err := readIn(path.Join(idx, "id"), 10)
			if err != nil {
				return err
			}
			t.CPUs[i].UncoreCache = id
			break
		}
	}
	return nil
}

// sharedCPUs counts the CPUs of a shared_cpu_map, comma-separated 32-bit hex words.
func sharedCPUs(fsys fs.FS, p string) (int, error) {
	b, err := fs.ReadFile(fsys, p)
	if err != nil {
		return 0, fmt.Errorf("reading the CPU caches: %w", err)
	}
	n := 0
	for _, w := range strings.Split(strings.TrimSpace(string(b)), ",") {
		v, err := strconv.ParseUint(w, 16, 64)
		if err != nil {
			return 0, fmt.Errorf("reading the CPU caches: %s %q: %w", p, b, err)
		}
		n += bits.OnesCount64(v)
	}
	return n, nil
}
