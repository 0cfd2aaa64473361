package agent

import (
	"context"
	"slices"
	"testing"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/orchlet/eviction"
)

// noObservation observes a node with nothing on it.
type noObservation struct{}

func (noObservation) Observe(context.Context) (eviction.Stats, error) { return eviction.Stats{}, nil }

// The components in the order a simulator steps them: the sources and the pod workers they feed,
// the garbage collectors once EnableGC made them, the volume stats and the eviction manager with
// an observer, the event recorder last.
func TestComponents(t *testing.T) {
	names := func(a *Agent) []string {
		var out []string
		for _, c := range a.Components() {
			out = append(out, c.Name())
		}
		return out
	}
	w := newWorld(t, nil)
	if got, want := names(w.agent), []string{ComponentSources, ComponentPodWorkers, ComponentEvents}; !slices.Equal(got, want) {
		t.Errorf("bare agent: %q, want %q", got, want)
	}
	w = newWorldDeps(t, nil, func(d *Deps) { d.Observer = noObservation{} })
	if err := w.agent.EnableGC(v1beta1.NewDefault(), GCSettings{FsInfo: w.rt}); err != nil {
		t.Fatal(err)
	}
	want := []string{ComponentSources, ComponentPodWorkers, ComponentContainerGC, ComponentImageGC, ComponentVolumeStats, ComponentEviction, ComponentEvents}
	if got := names(w.agent); !slices.Equal(got, want) {
		t.Errorf("with collectors and an observer: %q, want %q", got, want)
	}
	// Each steps its own component: the collectors' first collections are due at once.
	for _, c := range w.agent.Components() {
		if c.Name() != ComponentContainerGC && c.Name() != ComponentImageGC {
			continue
		}
		if c.Idle() {
			t.Errorf("%s idle before its first collection", c.Name())
		}
		c.Step(w.ctx)
		if !c.Idle() {
			t.Errorf("%s not idle after its step", c.Name())
		}
	}
}
