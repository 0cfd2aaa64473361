// Package statefile writes the agent's state files (the CPU and memory managers' checkpoints) so
// that a crash leaves the old file or the new one, never part of one.
package statefile
