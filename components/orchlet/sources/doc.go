// Package sources reads the node agent's static pods in standalone mode, from a manifest file or
// directory (--pod-manifest-path) and a manifest URL (--manifest-url), and merges them into one
// desired state delivered as ordered per-pod updates.
//
// The pods follow Kubernetes' static-pod rules: each is renamed <name>-<node name>, put in the
// namespace "default" when it names none, bound to the node, and given a UID hashed from its source
// and content, so the same manifest always yields the same UID. A manifest that cannot be used is
// reported and changes nothing: the last good pods of that manifest stay. A poll decodes only the
// manifests whose bytes changed since the last poll; the others keep the pods they gave.
//
// Nothing here runs on its own schedule. Step polls the sources that are due on the injected clock,
// one poll at a time in a fixed order, and queues the resulting updates; NextDeadline says when the
// next poll is due and Idle whether any work is left, so a simulator can advance its fake clock only
// when the package is idle. Run is the production loop around Step.
//
// A simulator drives it without goroutines: after building Sources, call Step (the first reads are
// due at once), Drain the updates to the pod workers, then advance the fake clock to the earliest
// NextDeadline of all components, Step again, and so on. Idle is true once Step has run for the
// current instant and the updates are drained.
//
// Run also watches a source that has a Notifier (the manifest path on Linux, with inotify, as
// Kubernetes' kubelet does) and reads it as soon as it changes; the periodic poll stays as the
// fallback. The simulator's sources have no Notifier.
package sources
