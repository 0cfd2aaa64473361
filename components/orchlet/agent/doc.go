// Package agent assembles orchlet in standalone mode: pod sources feeding pod workers on a CRI
// runtime, with an event recorder. Production runs each component's own loop (Run, RunOnce); the
// simulator steps the components itself on a fake clock after Start.
package agent
