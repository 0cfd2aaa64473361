// Package topologymanager is the decision of the kubelet's topology manager
// (--topology-manager-policy, --topology-manager-scope): the NUMA affinity hints of the resource
// managers merged into the best one, and whether the policy admits a pod with it. It is pure:
// hints in, a hint and a verdict out; the CPU manager asks it at admission, with the hints of the
// other providers (the memory manager) beside its own.
package topologymanager
