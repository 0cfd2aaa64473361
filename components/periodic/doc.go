// Package periodic holds the loops that run work on a clock: a component's step at the deadlines
// it names (the garbage collectors' and the eviction manager's, whose steps a simulator calls
// itself), and work repeated every period until its context ends (controllers' sweeps,
// configuration reloads). Both read time only from the injected clock.
package periodic
