// Package value turns stored values into their encrypted form and back, with Kubernetes' providers
// (aescbc, aesgcm, secretbox, identity) and prefixes, orch in place of k8s.
package value
