// Package certificate obtains and rotates the node agent's certificates through the API server's
// certificate signing requests, as client-go's certificate manager does for the kubelet: the
// client certificate bootstrapped with --bootstrap-kubeconfig (LoadClientCert), then renewed in
// use, and the serving certificate of the HTTPS server.
package certificate
