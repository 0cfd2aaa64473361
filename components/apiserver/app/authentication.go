package app

import (
	"context"
	"crypto/sha256"
	"os"

	"github.com/benbjohnson/clock"
	"github.com/google/uuid"
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
	reloader, err := jwt.NewReloader(ctx, a, clk, metrics, apiServerID())
	if err != nil {
		return nil, err
	}
	return authn.Bearer(reloader), nil
}

// apiServerID identifies this server in metrics as Kubernetes does: from the host name.
func apiServerID() string {
	hostname, _ := os.Hostname()
	return "apiserver-" + uuid.NewHash(sha256.New(), uuid.Nil, []byte(hostname), 5).String()
}
