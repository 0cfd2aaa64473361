// Package volumes is the pod workers' volume manager: it sets up a pod's volumes before its
// sandbox (emptyDir, on a tmpfs for medium Memory; hostPath checked by type; downwardAPI,
// configMap, secret and projected files written as Kubernetes' AtomicWriter does, with service
// account tokens asked of the API server and renewed as the kubelet's token manager does), gives
// each container its mounts (subPaths, the pod's /etc/hosts, the termination message file), keeps
// the files of a running pod up to date, and tears them down with the pod. Volumes live under
// --root-dir/pods/<uid>/volumes/<plugin>/<name>, the plugins Kubernetes' escaped names renamed
// (orch.io~empty-dir). It also reads what the downward API and a container's environment take from
// the pod, the node and the API's configmaps and secrets.
package volumes
