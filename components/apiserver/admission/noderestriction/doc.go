// Package noderestriction is Kubernetes' NodeRestriction admission plugin, which comes with the
// Node authorization mode: a node writes only its own Node and Lease, mirror pods of its own and
// the status of pods bound to it, and requests tokens only for the service accounts of its pods.
package noderestriction
