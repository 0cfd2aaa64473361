// Package agent assembles orchlet in standalone mode: pod sources feeding pod workers on a CRI
// runtime, with an event recorder, driven either by their own loops (Run) or one step at a time on
// a fake clock (Step, NextDeadline, Idle) by the simulator.
package agent
