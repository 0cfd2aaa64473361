package sim

import (
	"strings"
	"testing"
)

// A layout numbers its CPUs socket by socket, node by node, core by core, as a two-socket,
// four-NUMA machine's sysfs would list them, a core numbered by its first thread as the kubelet numbers
// cores; a layout missing a level is refused.
func TestCPULayoutTopology(t *testing.T) {
	topo, err := CPULayout{Sockets: 2, NUMAPerSocket: 2, CoresPerNUMA: 2, ThreadsPerCore: 2}.topology()
	if err != nil {
		t.Fatal(err)
	}
	if len(topo.CPUs) != 16 {
		t.Fatalf("%d CPUs, want 16", len(topo.CPUs))
	}
	for _, c := range []struct{ id, socket, node, core int }{{0, 0, 0, 0}, {1, 0, 0, 0}, {2, 0, 0, 2}, {5, 0, 1, 4}, {9, 1, 2, 8}, {15, 1, 3, 14}} {
		got := topo.CPUs[c.id]
		if got.Socket != c.socket || got.NUMANode != c.node || got.Core != c.core {
			t.Errorf("CPU %d: %+v, want socket %d node %d core %d", c.id, got, c.socket, c.node, c.core)
		}
	}
	if _, err := (CPULayout{Sockets: 1}).topology(); err == nil || !strings.Contains(err.Error(), "host.cpus:") {
		t.Errorf("an incomplete layout: %v", err)
	}
}
