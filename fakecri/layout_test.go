package fakecri

import (
	"testing"
	"unsafe"
)

// What a simulator reads of every node's runtime every simulated second (LastSeq, InFlight, Idle,
// NextWakeup) is on the Runtime's first three cache lines: the call log's first (its sequence) and
// two more. Fails when a field moves away from them.
func TestRuntimeHotFieldsTogether(t *testing.T) {
	var r Runtime
	if off := unsafe.Offsetof(r.log); off != 0 {
		t.Errorf("the call log at byte %d, not first", off)
	}
	for _, f := range []struct {
		name string
		off  uintptr
		size uintptr
	}{
		{"clk", unsafe.Offsetof(r.clk), unsafe.Sizeof(r.clk)},
		{"inflight", unsafe.Offsetof(r.inflight), unsafe.Sizeof(r.inflight)},
		{"pendingEvents", unsafe.Offsetof(r.pendingEvents), unsafe.Sizeof(r.pendingEvents)},
		{"waitMu", unsafe.Offsetof(r.waitMu), unsafe.Sizeof(r.waitMu)},
		{"parked", unsafe.Offsetof(r.parked), unsafe.Sizeof(r.parked)},
		{"faulted", unsafe.Offsetof(r.faulted), unsafe.Sizeof(r.faulted)},
		{"mu", unsafe.Offsetof(r.mu), unsafe.Sizeof(r.mu)},
		{"sched", unsafe.Offsetof(r.sched), unsafe.Sizeof(r.sched)},
		{"logging", unsafe.Offsetof(r.logging), unsafe.Sizeof(r.logging)},
	} {
		if f.off+f.size > 3*64 {
			t.Errorf("%s at bytes %d-%d, past the first three cache lines", f.name, f.off, f.off+f.size)
		}
	}
}
