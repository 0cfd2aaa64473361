package sim

import (
	"context"
	"time"

	"orch.io/orch/components/orchlet/eviction"
)

// SampledSignals are the eviction signals a node's samples hold, in their order.
var SampledSignals = []eviction.Signal{
	eviction.SignalMemoryAvailable, eviction.SignalNodeFsAvailable, eviction.SignalImageFsAvailable, eviction.SignalPIDAvailable,
}

// Sample is what a node's eviction signals read at one instant: for each of SampledSignals, in
// that order, what is available and the capacity it is out of (bytes, or processes for
// pid.available). A signal the node could not observe reads 0 of 0.
type Sample struct {
	At        time.Duration
	Available [4]uint64
	Capacity  [4]uint64
}

// sampler reads a node's signals as its eviction manager would, through an observer of its own
// (the manager's caches stats per instant: a read of another's at the same instant could hand it
// stale ones), reading fakecri's state without a CRI call, so sampling changes nothing the trace
// records.
type sampler struct {
	obs     eviction.Observer
	host    *simNode
	samples []Sample
}

func newSampler(n *Node, h *Host, separateDiskGC bool) *sampler {
	o, _ := newObserver(inProcess{rt: n.rt}, n.clk.Now, h, n.Config, separateDiskGC) // no reply hook: sampling changes nothing
	var host Host
	if h != nil {
		host = *h
	}
	return &sampler{obs: o, host: &simNode{host: host}}
}

func (s *sampler) sample(ctx context.Context, at time.Duration) {
	st, err := s.obs.Observe(ctx)
	if err != nil {
		return
	}
	var x Sample
	x.At = at
	if m := st.Memory; m != nil {
		x.Available[0], x.Capacity[0] = m.AvailableBytes, s.host.host.memory()
	}
	if f := st.NodeFs; f != nil {
		x.Available[1], x.Capacity[1] = f.AvailableBytes, f.CapacityBytes
	}
	img := st.ImageFs
	if img == nil {
		img = st.NodeFs
	}
	if img != nil {
		x.Available[2], x.Capacity[2] = img.AvailableBytes, img.CapacityBytes
	}
	if p := st.Pids; p != nil {
		x.Capacity[3] = p.MaxPID
		if p.MaxPID > p.Running {
			x.Available[3] = p.MaxPID - p.Running
		}
	}
	s.samples = append(s.samples, x)
}

// Samples are the node's signals read at the instants the world visited, at most one each
// Options.SignalPeriod (none without it).
func (n *Node) Samples() []Sample {
	if n.sampler == nil {
		return nil
	}
	return n.sampler.samples
}

// sampleSignals reads every node's signals when a period has passed since the last reading; the
// world calls it settled, before it moves the clock.
func (w *World) sampleSignals() {
	if w.signalPeriod <= 0 {
		return
	}
	now := w.Now()
	if w.sampled && now < w.lastSample+w.signalPeriod {
		return
	}
	w.sampled, w.lastSample = true, now
	w.dues = false // said to change nothing; next asks again all the same, at a sample's rare instants
	for _, n := range w.nodes {
		if n.sampler != nil {
			n.sampler.sample(w.ctx, now)
		}
	}
}
