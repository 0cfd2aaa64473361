// Package periodic runs a component's step at the deadlines it names, on its clock: the loop the
// garbage collectors and the eviction manager share, whose steps a simulator calls itself.
package periodic
