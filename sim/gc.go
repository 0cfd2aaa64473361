package sim

import (
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
