package app

import (
	"context"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/authn"
	"orch.io/orch/components/authn/jwt"
)

// jwtAuthenticator starts the JWT authenticators of the --authentication-config file, in their
// list order; nil without the file. They run until ctx ends.
func jwtAuthenticator(ctx context.Context, files *configFiles, clk clock.Clock) (authn.Authenticator, error) {
	a := files.authentication
	if a == nil {
		return nil, nil
	}
	set, err := jwt.NewSet(ctx, a, clk)
	if err != nil {
		return nil, err
	}
	return authn.Bearer(set), nil
}
