// Package eviction is the orchlet's eviction manager: a pure decision core fed node and pod usage
// and the time, as Kubernetes' pkg/kubelet/eviction decides, and a thin loop that observes every
// 10 s (and at once when a memory threshold armed with the kernel is crossed), asks for node-level
// reclaim and kills the pod the core chose.
package eviction
