package sim

import (
	"context"
	"time"

	"orch.io/orch/components/orchlet/app"
	"orch.io/orch/components/orchlet/options"
)

// enableGC gives the node its garbage collectors as production does, the image filesystem sized by
// its fakecri.
func (n *Node) enableGC(o *options.Options, logs string, sourcesReady func() bool) error {
	s := app.GCSettings(o)
	s.FsInfo, s.PodLogsDir, s.SourcesReady = n.rt, logs, sourcesReady
	return n.Agent.EnableGC(n.Config, s)
}

// stepGC runs the collections due, in the driver's goroutine once the pod workers are settled, so
// their CRI calls come in the same order every run; it reports whether one ran.
func (n *Node) stepGC(ctx context.Context) bool {
	did := false
	if !n.Agent.GC.Containers.Idle() {
		n.Agent.GC.Containers.Step(ctx)
		did = true
	}
	if !n.Agent.GC.Images.Idle() {
		n.Agent.GC.Images.Step(ctx)
		did = true
	}
	return did
}

// gcDeadlines is when the node's collections are next due.
func (n *Node) gcDeadlines() []time.Time {
	var out []time.Time
	if t, ok := n.Agent.GC.Containers.NextDeadline(); ok {
		out = append(out, t)
	}
	if t, ok := n.Agent.GC.Images.NextDeadline(); ok {
		out = append(out, t)
	}
	return out
}
