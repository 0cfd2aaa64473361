package memorymanager

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Node is one NUMA node's memory as cadvisor reports it to the kubelet: MemTotal in bytes and
// each huge page size's pool.
type Node struct {
	ID        int
	Memory    uint64
	HugePages []HugePages
}

// HugePages is a pool of huge pages: the size of a page in KiB and how many there are.
type HugePages struct {
	PageSizeKiB, NumPages uint64
}

// Discover reads the NUMA nodes' memory from sysfs, fsys being its devices/system/node directory:
// node<N>/meminfo ("Node N MemTotal: K kB") and node<N>/hugepages/hugepages-<size>kB/nr_hugepages.
// A machine without the directory (no NUMA) has none.
func Discover(fsys fs.FS) ([]Node, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, nil
	}
	var nodes []Node
	for _, e := range entries {
		n, ok := strings.CutPrefix(e.Name(), "node")
		id, err := strconv.Atoi(n)
		if !ok || err != nil {
			continue
		}
		node := Node{ID: id}
		meminfo, err := fs.ReadFile(fsys, path.Join(e.Name(), "meminfo"))
		if err != nil {
			return nil, fmt.Errorf("reading the NUMA nodes' memory: %w", err)
		}
		for _, line := range strings.Split(string(meminfo), "\n") {
			f := strings.Fields(line)
			if len(f) == 5 && f[2] == "MemTotal:" && f[4] == "kB" {
				kb, err := strconv.ParseUint(f[3], 10, 64)
				if err != nil {
					return nil, fmt.Errorf("reading the NUMA nodes' memory: node%d/meminfo %q: %w", id, line, err)
				}
				node.Memory = kb * 1024
			}
		}
		pools, _ := fs.ReadDir(fsys, path.Join(e.Name(), "hugepages"))
		for _, p := range pools {
			size, ok := strings.CutPrefix(p.Name(), "hugepages-")
			kb, err := strconv.ParseUint(strings.TrimSuffix(size, "kB"), 10, 64)
			if !ok || err != nil {
				continue
			}
			data, err := fs.ReadFile(fsys, path.Join(e.Name(), "hugepages", p.Name(), "nr_hugepages"))
			if err != nil {
				return nil, fmt.Errorf("reading the NUMA nodes' huge pages: %w", err)
			}
			count, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("reading the NUMA nodes' huge pages: node%d %s: %w", id, p.Name(), err)
			}
			node.HugePages = append(node.HugePages, HugePages{PageSizeKiB: kb, NumPages: count})
		}
		slices.SortFunc(node.HugePages, func(a, b HugePages) int { return int(a.PageSizeKiB) - int(b.PageSizeKiB) })
		nodes = append(nodes, node)
	}
	slices.SortFunc(nodes, func(a, b Node) int { return a.ID - b.ID })
	return nodes, nil
}
