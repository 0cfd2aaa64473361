// Package app builds the node agent from its parsed options and runs it, as the kubelet's
// cmd/kubelet/app does: the lock file and the start-up checks on the host, the pod node and the
// eviction observer of the machine, the agent on its CRI runtime with its garbage collectors and
// servers, and in API-server mode its clients, certificates, Node status and pod syncer.
// cmd/orchlet parses the command line and calls Run.
package app
