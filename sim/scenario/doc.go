// Package scenario reads scenario files (a node's options, its fakecri script, a timeline of changes
// and expectations), replays them in a sim.World, checks their expectations, compares their traces
// with the golden traces beside them and writes the scenario report; scenarios/README.md documents
// the format.
package scenario
