package app

import (
	"github.com/prometheus/client_golang/prometheus"

	"orch.io/orch/components/featuregates"
	"orch.io/orch/components/orchlet/agent"
	"orch.io/orch/components/orchlet/imagegc"
	"orch.io/orch/components/orchlet/options"
)

// GCSettings are the garbage collectors' command-line options (--pod-infra-container-image,
// --minimum-container-ttl-duration, --maximum-dead-containers-per-container,
// --maximum-dead-containers) and gates (ImageMaximumGCAge, ImageVolume); the caller adds FsInfo and
// what the agent's Deps had.
func GCSettings(o *options.Options) agent.GCSettings {
	return agent.GCSettings{
		SandboxImage:        o.Flags.PodInfraContainerImage,
		MinContainerAge:     o.Flags.MinimumContainerTTLDuration,
		MaxDeadPerContainer: o.Flags.MaximumDeadContainersPerContainer,
		MaxDead:             o.Flags.MaximumDeadContainers,
		MaxImageAge:         o.Gates.Enabled(featuregates.ImageMaximumGCAge),
		ImageVolumes:        o.Gates.Enabled(featuregates.ImageVolume),
	}
}

// enableGC gives the agent its garbage collectors, the image filesystem sized by statfs, their
// metrics on the agent's registry.
func enableGC(a *agent.Agent, o *options.Options, sourcesReady func() bool, metrics prometheus.Registerer) error {
	s := GCSettings(o)
	s.FsInfo, s.SourcesReady, s.Metrics = imagegc.Statfs{}, sourcesReady, metrics
	return a.EnableGC(o.Config, s)
}
