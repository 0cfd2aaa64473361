// Package memorymanager is the kubelet's memory manager (--memory-manager-policy, --reserved-memory):
// under the Static policy each container of a Guaranteed pod is given its memory and huge pages
// from a set of NUMA nodes, chosen with the topology manager's merged hint, kept in the kubelet's
// checkpoint (memory_manager_state) and handed to the runtime as the container's cpuset.mems.
package memorymanager
