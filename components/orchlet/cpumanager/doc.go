// Package cpumanager gives the containers of Guaranteed pods that ask for whole CPUs exclusive
// cpusets, as Kubernetes' CPU manager does with --cpu-manager-policy=static, and records its
// assignments in <root-dir>/cpu_manager_state in the kubelet's checkpoint format.
package cpumanager
