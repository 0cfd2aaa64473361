// Package agent assembles orchlet in standalone mode: pod sources feeding pod workers on a CRI
// runtime, with an event recorder, garbage collectors and an eviction manager. Its Components are
// one contract (Run, Step, Idle, NextDeadline) listed in one place: production runs each
// component's own loop (Run, RunOnce); the simulator steps them itself on a fake clock after Start.
package agent
