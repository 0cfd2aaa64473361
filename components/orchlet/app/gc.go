package app

import (
	"github.com/prometheus/client_golang/prometheus"

	"orch.io/orch/components/orchlet/agent"
	"orch.io/orch/components/orchlet/imagegc"
	"orch.io/orch/components/orchlet/options"
)

// enableGC gives the agent its garbage collectors, the image filesystem sized by statfs, their
// metrics on the agent's registry.
func enableGC(a *agent.Agent, o *options.Options, sourcesReady func() bool, metrics prometheus.Registerer) error {
	s := agent.GCSettingsFrom(o)
	s.FsInfo, s.SourcesReady, s.Metrics = imagegc.Statfs{}, sourcesReady, metrics
	return a.EnableGC(o.Config, s)
}
