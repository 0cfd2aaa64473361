package sim

import (
	"testing"
	"unsafe"
)

// What the driver reads at every look of every node is on a Node's first five cache lines, and a
// Node is 64-byte aligned (its size class, 576 bytes, a multiple of 64): fails when a field the
// looks read moves past them, or the size leaves the class.
func TestNodeHotFieldsTogether(t *testing.T) {
	var n Node
	for _, f := range []struct {
		name      string
		off, size uintptr
	}{
		{"stepping", unsafe.Offsetof(n.stepping), unsafe.Sizeof(n.stepping)},
		{"background", unsafe.Offsetof(n.background), unsafe.Sizeof(n.background)},
		{"clk", unsafe.Offsetof(n.clk), unsafe.Sizeof(n.clk)},
		{"rt", unsafe.Offsetof(n.rt), unsafe.Sizeof(n.rt)},
		{"obs", unsafe.Offsetof(n.obs), unsafe.Sizeof(n.obs)},
		{"obsWaiting", unsafe.Offsetof(n.obsWaiting), unsafe.Sizeof(n.obsWaiting)},
		{"pvFresh", unsafe.Offsetof(n.pvFresh), unsafe.Sizeof(n.pvFresh)},
		{"pv", unsafe.Offsetof(n.pv), unsafe.Sizeof(n.pv)},
		{"pods", unsafe.Offsetof(n.pods), unsafe.Sizeof(n.pods)},
		{"memcg", unsafe.Offsetof(n.memcg), unsafe.Sizeof(n.memcg)},
		{"api", unsafe.Offsetof(n.api), unsafe.Sizeof(n.api)},
		{"life", unsafe.Offsetof(n.life), unsafe.Sizeof(n.life)},
		{"agentDue", unsafe.Offsetof(n.agentDue), unsafe.Sizeof(n.agentDue)},
		{"feedDue", unsafe.Offsetof(n.feedDue), unsafe.Sizeof(n.feedDue)},
		{"timedDue", unsafe.Offsetof(n.timedDue), unsafe.Sizeof(n.timedDue)},
		{"readers", unsafe.Offsetof(n.readers), unsafe.Sizeof(n.readers)},
		{"inFlight", unsafe.Offsetof(n.inFlight), unsafe.Sizeof(n.inFlight)},
		{"due", unsafe.Offsetof(n.due), unsafe.Sizeof(n.due)},
		{"pending", unsafe.Offsetof(n.pending), unsafe.Sizeof(n.pending)},
		{"ended", unsafe.Offsetof(n.ended), unsafe.Sizeof(n.ended)},
	} {
		if f.off+f.size > 5*64 {
			t.Errorf("%s at bytes %d-%d, past the first five cache lines", f.name, f.off, f.off+f.size)
		}
	}
	if size := unsafe.Sizeof(n); size <= 512 || size > 576 {
		t.Errorf("a Node is %d bytes, out of the 576-byte size class", size)
	}
}
