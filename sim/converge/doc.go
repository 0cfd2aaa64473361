// Package converge judges a runtime's state against the pods that should run on it: what is
// missing, doubled, leaked or replaced, for the simulator's scenarios and orchchaos' kills alike.
package converge
