package app

import (
	"testing"
	"time"

	apiversion "k8s.io/apimachinery/pkg/version"

	"orch.io/orch/components/orchlet/agent"
	"orch.io/orch/components/orchlet/options"
)

// The collectors' options and gates, read from the command line.
func TestGCSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want agent.GCSettings
	}{
		{nil, agent.GCSettings{MaxDeadPerContainer: 1, MaxDead: -1, MaxImageAge: true}},
		{[]string{"--pod-infra-container-image=pause:3.10", "--minimum-container-ttl-duration=1m",
			"--maximum-dead-containers-per-container=3", "--maximum-dead-containers=20", "--feature-gates=ImageMaximumGCAge=false"},
			agent.GCSettings{SandboxImage: "pause:3.10", MinContainerAge: time.Minute, MaxDeadPerContainer: 3, MaxDead: 20}},
	} {
		o, err := options.Parse(tc.args, apiversion.Info{GitVersion: "v0.0.0"})
		if err != nil {
			t.Fatal(err)
		}
		got := GCSettings(o)
		if got.SandboxImage != tc.want.SandboxImage || got.MinContainerAge != tc.want.MinContainerAge ||
			got.MaxDeadPerContainer != tc.want.MaxDeadPerContainer || got.MaxDead != tc.want.MaxDead || got.MaxImageAge != tc.want.MaxImageAge {
			t.Errorf("%q: got %+v, want %+v", tc.args, got, tc.want)
		}
	}
}
