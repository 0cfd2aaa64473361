package eviction

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// TestSignalObservationsQuantities holds the observations' quantities, made in one array, to the
// ones made one at a time: the same value and format for every signal, each quantity its own (a
// change to one leaves the others), with every part observed and with imagefs and containerfs
// observing nodefs.
func TestSignalObservationsQuantities(t *testing.T) {
	mem := &MemoryStats{AvailableBytes: 3 << 30, WorkingSetBytes: 1 << 30}
	pods := &MemoryStats{AvailableBytes: 2 << 30, WorkingSetBytes: 512 << 20}
	nodefs := &FsStats{AvailableBytes: 10 << 30, CapacityBytes: 100 << 30, InodesFree: 1000, Inodes: 5000}
	imagefs := &FsStats{AvailableBytes: 20 << 30, CapacityBytes: 200 << 30, InodesFree: 2000, Inodes: 6000}
	ctrfs := &FsStats{AvailableBytes: 30 << 30, CapacityBytes: 300 << 30, InodesFree: 3000, Inodes: 7000}
	pids := &PidStats{MaxPID: 4096, Running: 100}
	b := func(v uint64) *resource.Quantity { return resource.NewQuantity(int64(v), resource.BinarySI) }
	c := func(v uint64) *resource.Quantity { return resource.NewQuantity(int64(v), resource.DecimalSI) }
	fsWant := func(f *FsStats) [2]observation {
		return [2]observation{{b(f.AvailableBytes), b(f.CapacityBytes)}, {c(f.InodesFree), c(f.Inodes)}}
	}
	for _, tc := range []struct {
		name       string
		s          Stats
		image, ctr *FsStats
	}{
		{"every part", Stats{Memory: mem, PodsMemory: pods, NodeFs: nodefs, ImageFs: imagefs, ContainerFs: ctrfs, Pids: pids}, imagefs, ctrfs},
		{"one filesystem", Stats{Memory: mem, PodsMemory: pods, NodeFs: nodefs, Pids: pids}, nodefs, nodefs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := map[Signal]observation{
				SignalMemoryAvailable:            {b(mem.AvailableBytes), b(mem.AvailableBytes + mem.WorkingSetBytes)},
				SignalAllocatableMemoryAvailable: {b(pods.AvailableBytes), b(pods.AvailableBytes + pods.WorkingSetBytes)},
				SignalPIDAvailable:               {c(pids.MaxPID - pids.Running), c(pids.MaxPID)},
			}
			for _, f := range []struct {
				fs            *FsStats
				bytes, inodes Signal
			}{
				{nodefs, SignalNodeFsAvailable, SignalNodeFsInodesFree},
				{tc.image, SignalImageFsAvailable, SignalImageFsInodesFree},
				{tc.ctr, SignalContainerFsAvailable, SignalContainerFsInodesFree},
			} {
				w := fsWant(f.fs)
				want[f.bytes], want[f.inodes] = w[0], w[1]
			}
			got := makeSignalObservations(tc.s)
			if len(got) != len(want) {
				t.Fatalf("%d signals observed, want %d", len(got), len(want))
			}
			seen := map[*resource.Quantity]Signal{}
			for sig, w := range want {
				g, ok := got[sig]
				if !ok {
					t.Fatalf("%s not observed", sig)
				}
				for _, p := range [][2]*resource.Quantity{{g.available, w.available}, {g.capacity, w.capacity}} {
					if p[0].Cmp(*p[1]) != 0 || p[0].Format != p[1].Format || p[0].String() != p[1].String() {
						t.Errorf("%s: %v (%s), want %v (%s)", sig, p[0], p[0].Format, p[1], p[1].Format)
					}
					if other, dup := seen[p[0]]; dup {
						t.Errorf("%s shares a quantity with %s", sig, other)
					}
					seen[p[0]] = sig
				}
			}
			// Each its own: a change to one is seen in no other.
			got[SignalMemoryAvailable].available.Add(*resource.NewQuantity(1, resource.BinarySI))
			for sig, g := range got {
				if sig != SignalMemoryAvailable && (g.available.Cmp(*want[sig].available) != 0 || g.capacity.Cmp(*want[sig].capacity) != 0) {
					t.Errorf("%s changed with memory.available", sig)
				}
			}
		})
	}
}
