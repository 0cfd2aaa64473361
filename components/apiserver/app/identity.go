package app

import (
	"crypto/tls"
	"fmt"
	"slices"

	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/authz/rbac"
	"orch.io/orch/components/certs"
)

// clientCertAuthenticator is the authenticator of --client-ca-file, nil without the flag: a
// client certificate signed by one of its authorities authenticates as its CommonName, in its
// Organizations.
func clientCertAuthenticator(o *Options) (authn.Authenticator, error) {
	if o.ClientCAFile == "" {
		return nil, nil
	}
	pool, err := certs.LoadCAPool(o.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("--client-ca-file: %w", err)
	}
	return authn.X509(pool), nil
}

// servingTLS serves cert and, with --client-ca-file, asks clients for a certificate. As in
// Kubernetes the handshake does not verify it (tls.RequestClientCert): a request without one may
// still authenticate otherwise, and one that does not verify is answered 401 by the
// authenticator rather than by a failed handshake. The authorities are named in the request so a
// client picks the right certificate.
func servingTLS(o *Options, cert tls.Certificate) (*tls.Config, error) {
	cfg := certs.TLSConfig(cert)
	if o.ClientCAFile == "" {
		return cfg, nil
	}
	pool, err := certs.LoadCAPool(o.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("--client-ca-file: %w", err)
	}
	cfg.ClientCAs, cfg.ClientAuth = pool, tls.RequestClientCert
	return cfg, nil
}

// modeAuthorizer is the chain of --authorization-mode. With mode Node it also answers the link
// the server binds to its pods store and that turns on NodeRestriction; otherwise that is nil.
// The RBAC authorizer reads roles, which the server keeps in step with its stores.
func modeAuthorizer(o *Options, roles *rbac.Index) (authz.Authorizer, *server.NodeAuthorization, error) {
	modes, err := authz.ParseModes(o.AuthorizationMode)
	if err != nil {
		return nil, nil, err
	}
	node := &server.NodeAuthorization{}
	authorizer, err := authz.New(o.AuthorizationMode, node.Pod, node.References, rbac.Authorizer(roles))
	if err != nil {
		return nil, nil, err
	}
	if !slices.Contains(modes, authz.ModeNode) {
		node = nil
	}
	return authorizer, node, nil
}
