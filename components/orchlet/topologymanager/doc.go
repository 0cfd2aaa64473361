// Package topologymanager is the kubelet's topology manager (--topology-manager-policy,
// --topology-manager-scope, --topology-manager-policy-options): the NUMA affinity hints of the
// resource managers (the static CPU manager, the Static memory manager) merged into the best one,
// whether the policy admits a pod with it, and the pod admit handler (Manager) that asks each
// provider for its hints and has it allocate from the merged hint. Merging is pure: hints in, a
// hint and a verdict out.
package topologymanager
