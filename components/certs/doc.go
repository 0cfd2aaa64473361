// Package certs provides the serving certificates of the API server and the node agent: a
// self-signed pair kept under --cert-dir when no --tls-cert-file / --tls-private-key-file is given
// (EnsureSelfSigned, ServingFiles), and loading a pair with errors that name the files
// (LoadServing).
//
// As in Kubernetes, a pair is generated only when neither file exists. An existing pair is reused
// as it is, even if it has expired or does not name the hosts asked for now; a pair that cannot be
// read, does not parse or does not match, or a certificate without its key (or the reverse), is
// reported as an error and left in place for the operator to inspect or delete.
package certs
