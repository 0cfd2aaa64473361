package app

import (
	"context"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"

	"orch.io/orch/components/authn"
	"orch.io/orch/components/authn/jwt"
)

// jwtAuthenticator starts the JWT authenticators of the --authentication-config file, in their
// list order, and their automatic reload when the file changes; nil without the file. They run
// until ctx ends; the reload's metrics go to metrics.
func jwtAuthenticator(ctx context.Context, files *configFiles, clk clock.Clock, metrics prometheus.Registerer) (authn.Authenticator, error) {
	a := files.authentication
	if a == nil {
		return nil, nil
	}
	reloader, err := jwt.NewReloader(ctx, a, clk, metrics, apiserverID())
	if err != nil {
		return nil, err
	}
	return authn.Bearer(reloader), nil
}
