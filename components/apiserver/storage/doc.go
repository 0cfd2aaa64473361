// Package storage defines the versioned key-value store the API server keeps objects in: the contract
// that the etcd and memory implementations share, and the errors callers turn into API answers.
package storage
