package agent

import (
	"context"
	"time"
)

// Component is one of the agent's loops, which production runs and a simulator steps: Run steps
// it whenever work is due until ctx ends; a simulator instead calls Step when it is not Idle, and
// moves its clock to the earliest NextDeadline.
type Component interface {
	// Name says which component it is (the Component* constants).
	Name() string
	Run(ctx context.Context) error
	// Step does the work due at the clock's now.
	Step(ctx context.Context)
	// Idle reports that no work is due at the clock's now.
	Idle() bool
	// NextDeadline is when work is next due by the clock alone; false when none will be until
	// something else changes.
	NextDeadline() (time.Time, bool)
}

// The names of the components.
const (
	ComponentSources     = "sources"
	ComponentPodWorkers  = "pod workers"
	ComponentContainerGC = "container garbage collector"
	ComponentImageGC     = "image garbage collector"
	ComponentVolumeStats = "volume stats"
	ComponentEviction    = "eviction manager"
	ComponentEvents      = "event recorder"
)

// Components are the agent's components in the order a simulator steps them at an instant: the
// pod sources, whose updates feed the pod workers; the pod workers; then what reads what the
// workers did: the garbage collectors (once EnableGC made them), the volume stats and the eviction
// manager (with an observer), and last the event recorder, which writes what the others recorded.
// Run runs each; a component added here is run and stepped.
func (a *Agent) Components() []Component {
	cs := []Component{
		component{a.Sources, ComponentSources, func(ctx context.Context) { a.Sources.Step(ctx) }},
		component{a.Pods, ComponentPodWorkers, func(ctx context.Context) { a.Pods.Step(ctx) }},
	}
	if a.GC != nil {
		cs = append(cs,
			component{a.GC.Containers, ComponentContainerGC, a.GC.Containers.Step},
			component{a.GC.Images, ComponentImageGC, a.GC.Images.Step})
	}
	if a.Eviction != nil {
		cs = append(cs,
			component{a.VolumeStats, ComponentVolumeStats, func(ctx context.Context) { a.VolumeStats.Step(ctx) }},
			component{a.Eviction, ComponentEviction, func(ctx context.Context) { a.Eviction.Step(ctx) }})
	}
	return append(cs, component{a.Events, ComponentEvents, func(ctx context.Context) { a.Events.Step(ctx) }})
}

// loop is what every component has besides Step, whose result (if any) differs.
type loop interface {
	Run(ctx context.Context) error
	Idle() bool
	NextDeadline() (time.Time, bool)
}

type component struct {
	loop
	name string
	step func(context.Context)
}

func (c component) Name() string             { return c.name }
func (c component) Step(ctx context.Context) { c.step(ctx) }
