package jwt

import (
	"context"
	"errors"
	"fmt"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apis/apiserver/config"
	"orch.io/orch/components/authn"
)

// Set is the JWT authenticators of one authentication configuration, tried in list order.
type Set struct {
	authenticators []*Authenticator
	cancel         context.CancelFunc
}

// NewSet starts the authenticators of auth. They run until ctx ends or Close is called.
func NewSet(ctx context.Context, auth *config.Authentication, clk clock.Clock) (*Set, error) {
	ctx, cancel := context.WithCancel(ctx)
	s := &Set{cancel: cancel}
	for i, c := range auth.Config.JWT {
		a, err := New(ctx, c, auth.JWT[i], clk)
		if err != nil {
			cancel()
			return nil, fmt.Errorf("%s: jwt[%d]: %w", auth.File, i, err)
		}
		s.authenticators = append(s.authenticators, a)
	}
	return s, nil
}

// CheckSupported refuses, naming the field, what the authenticators of auth cannot honour.
func CheckSupported(auth *config.Authentication) error {
	var errs []error
	for i, c := range auth.Config.JWT {
		if err := checkSupported(c); err != nil {
			errs = append(errs, fmt.Errorf("%s: jwt[%d].%w", auth.File, i, err))
		}
	}
	return errors.Join(errs...)
}

// Close stops the authenticators.
func (s *Set) Close() {
	s.cancel()
}

// Len is the number of authenticators.
func (s *Set) Len() int {
	return len(s.authenticators)
}

// AuthenticateToken asks the authenticators in order. Issuers are unique, so at most one has an
// opinion on a token, and its error is final.
func (s *Set) AuthenticateToken(ctx context.Context, token string) (*authn.UserInfo, bool, error) {
	for _, a := range s.authenticators {
		user, ok, err := a.AuthenticateToken(ctx, token)
		if err != nil || ok {
			return user, ok, err
		}
	}
	return nil, false, nil
}

// HealthCheck answers nil when every authenticator can verify tokens.
func (s *Set) HealthCheck() error {
	var errs []error
	for _, a := range s.authenticators {
		errs = append(errs, a.HealthCheck())
	}
	return errors.Join(errs...)
}

// WaitInitialized waits until every authenticator can verify tokens, or ctx ends.
func (s *Set) WaitInitialized(ctx context.Context) error {
	for _, a := range s.authenticators {
		select {
		case <-a.Initialized():
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
