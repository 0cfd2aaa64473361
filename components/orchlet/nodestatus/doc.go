// Package nodestatus registers the agent's Node with the API server, posts its status on the
// clock, and renews its heartbeat Lease, as the kubelet's node status and lease controllers do.
package nodestatus
