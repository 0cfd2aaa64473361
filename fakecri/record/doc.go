// Package record is fakecri's recorder: a CRI proxy in front of a real runtime that forwards every
// call as it came and writes what the runtime did (images, exits, usage curves, log lines) as a
// fakecri script and a scenario skeleton that play the same node back (`fakecri record`).
package record
