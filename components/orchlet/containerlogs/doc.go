// Package containerlogs rotates the containers' CRI log files as Kubernetes' kubelet does, and
// reads a container's log across its rotated files for the agent's log endpoint.
package containerlogs
