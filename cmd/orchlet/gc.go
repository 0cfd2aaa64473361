package main

import (
	"orch.io/orch/components/orchlet/agent"
	"orch.io/orch/components/orchlet/imagegc"
	"orch.io/orch/components/orchlet/options"
)

// enableGC gives the agent its garbage collectors, the image filesystem sized by statfs.
func enableGC(a *agent.Agent, o *options.Options, sourcesReady func() bool) error {
	s := agent.GCSettingsFrom(o)
	s.FsInfo, s.SourcesReady = imagegc.Statfs{}, sourcesReady
	return a.EnableGC(o.Config, s)
}
