// Package encryptionconfig turns a checked EncryptionConfiguration into the transformer of each
// resource, as Kubernetes' API server does, and follows the file when asked to reload it.
package encryptionconfig
