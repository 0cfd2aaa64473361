// Package target makes a profile live: it reads and checks a target profile (targets/*.yaml: how
// to start or reach each surface of an implementation and how it spells its names), builds the
// implementation's programs, starts its API server and runs its commands, so the steps reach any
// implementation the same way.
package target
