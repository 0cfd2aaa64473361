package v1

import "k8s.io/apimachinery/pkg/runtime/schema"

// SchemeGroupVersion is certificates.orch.io/v1.
var SchemeGroupVersion = schema.GroupVersion{Group: "certificates.orch.io", Version: "v1"}

// The signers orch knows, Kubernetes' built-in ones renamed.
const (
	// NodeClientSigner issues the client certificates nodes reach the API server with.
	NodeClientSigner = "orch.io/orch-apiserver-client-orchlet"
	// NodeServingSigner issues the serving certificates of the nodes' HTTPS servers.
	NodeServingSigner = "orch.io/orchlet-serving"
	// ClientSigner issues client certificates for any user the API server's CA vouches for.
	ClientSigner = "orch.io/orch-apiserver-client"
)
