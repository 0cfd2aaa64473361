// Package statefile reads and writes the agent's state files (the CPU and memory managers'
// checkpoints): written so that a crash leaves the old file or the new one, never part of one, and
// read back only when the kubelet's checksum over them verifies.
package statefile
