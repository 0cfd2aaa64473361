// Package nodestatus registers the agent's Node with the API server, posts its status on the
// clock, and renews its heartbeat Lease, as the kubelet's node status and lease controllers do; it
// also works out what that status says of the node (addresses, labels, capacity and allocatable),
// as the kubelet's nodestatus setters do.
package nodestatus
