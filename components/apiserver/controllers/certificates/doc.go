// Package certificates is the server's certificate signing request controller: Kubernetes'
// approver of node client requests (sarapprove), whose requesters may have them approved, and its
// signer of approved requests with the cluster CA, for the orch signers.
package certificates
