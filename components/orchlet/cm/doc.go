// Package cm is the node side of Kubernetes' container manager (pkg/kubelet/cm) that sits outside
// the pod runtime: the node's capacity and allocatable, their enforcement on the pods' cgroup
// (orchpods) and on the reserved cgroups (--enforce-node-allocatable), the system cgroups the
// agent and the host's other processes are moved into (--kubelet-cgroups, --system-cgroups), and
// the agent's own process settings (--oom-score-adj, --max-open-files). Decisions are pure
// functions of the configuration and the machine; the cgroup filesystem is written through
// Hierarchy, on cgroup v1 or v2, for the cgroupfs or the systemd driver.
package cm
