// Package apiwire reads the few fields the simulator's trace shows (a Node's name and conditions,
// a Lease's renew time) straight from an API answer in Kubernetes' protobuf envelope, without
// decoding the whole object.
package apiwire
