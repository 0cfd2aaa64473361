// Package script is fakecri's script language: the types a script is written in (nodes, images,
// containers, usage curves, exec answers, faults, files, ports), reading and checking them, and the
// compiled form the runtime reads throughout. It knows nothing of a running runtime.
package script
