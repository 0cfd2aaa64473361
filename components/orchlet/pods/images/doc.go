// Package images makes the images of pods' containers and image volumes present before they start,
// as Kubernetes' image manager and puller do: by each image's pull policy (Always for an untagged or
// :latest image without a digest, IfNotPresent otherwise, Never), with a back-off after a failed
// pull, at most registryPullQPS pulls a second (the token bucket waited for on the clock, not in a
// call), and with the credentials of the pod's image pull secrets matched to the image's registry
// as the kubelet's keyring matches them.
//
// With serializeImagePulls a pull is made in Step, one at a time on the node. Without it a pull runs
// in a goroutine of its own, counted as a call until its result is recorded; that result is handed
// to the pod's next sync only at the start of a Step (Settle), never in the middle of one, and the
// pod's other containers wait for it, as Kubernetes' pod workers start a pod's containers one after
// the other. A fault scripted on PullImage that counts calls or draws a probability then applies to
// whichever background pull reaches the runtime first, which the scheduler decides: script
// per-image pull failures instead.
package images
