// Package nodeproxy reaches a node's orchlet server from the API server, as Kubernetes' kubelet
// client does: the node's address of the first preferred type in its status and the port of its
// daemon endpoint, over TLS with the API server's client certificate, verifying the orchlet's
// serving certificate against a certificate authority when one is given.
package nodeproxy
