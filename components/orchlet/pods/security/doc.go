// Package security is what the pod workers send the runtime about a pod's and its containers'
// privileges, as Kubernetes' kuberuntime and securitycontext packages make it: the effective
// security context (the pod's settings overridden field by field by the container's), the user
// checked against runAsNonRoot, capabilities, masked and read-only /proc paths, seccomp and
// AppArmor profiles, supplemental groups, the Linux namespaces shared with the node, and the
// sysctls a pod may set (the safe ones and --allowed-unsafe-sysctls, each in its namespace).
package security
