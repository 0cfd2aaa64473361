// Package certificate obtains and rotates the node agent's certificates through the API server's
// certificate signing requests, as client-go's certificate manager does for the kubelet.
package certificate
