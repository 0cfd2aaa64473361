package jwt

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apis/apiserver/config"
	apiv1 "orch.io/orch/components/apis/apiserver/v1"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/reload"
)

const (
	// ReloadInterval is how often the configuration file is read for changes. Kubernetes watches
	// the file and also reads it every minute; orch, without file notifications, reads it more
	// often so a change lands about as fast.
	ReloadInterval = 10 * time.Second
	// updateTimeout bounds the wait for a new file's authenticators to reach their issuers
	// (Kubernetes' UpdateAuthenticationConfigTimeout); past it the old ones stay and the file is
	// tried again at the next read.
	updateTimeout = time.Minute
	// retireDelay is how long replaced authenticators keep running, for the requests that are
	// still using them.
	retireDelay = time.Minute
)

// Reloader holds the JWT authenticators of an --authentication-config file and replaces them,
// as Kubernetes' automatic reload does, when the file changes: a valid new file whose issuers can
// all be reached replaces them atomically, without dropping a request; an invalid one is logged,
// counted and ignored until the file changes again. The anonymous section may not change.
type Reloader struct {
	*reload.Reloader[Set]
}

// NewReloader starts the authenticators of auth, which was loaded from auth.File, and reads the
// file every ReloadInterval on clk until ctx ends. Its metrics go to reg, labelled with the hash
// of apiServerID as Kubernetes labels them.
func NewReloader(ctx context.Context, auth *config.Authentication, clk clock.Clock, reg prometheus.Registerer, apiServerID string) (*Reloader, error) {
	metrics, err := reload.NewMetrics(reg, "authentication", apiServerID, true)
	if err != nil {
		return nil, err
	}
	set, err := NewSet(ctx, auth, clk)
	if err != nil {
		return nil, err
	}
	file, anonymous := auth.File, auth.Config.Anonymous
	applied := reload.Applied(file, auth.Config, func(data []byte) (*apiv1.AuthenticationConfiguration, error) {
		again, err := config.ParseAuthentication(file, data)
		if err != nil {
			return nil, err
		}
		return again.Config, nil
	})
	r := reload.New(reload.Options[Set]{
		File: file, Interval: ReloadInterval, Clock: clk, Metrics: metrics,
		Load: func(ctx context.Context, data []byte, _ *Set) (*Set, error) {
			return load(ctx, file, data, anonymous, clk)
		},
		Ready: func(ctx context.Context, set *Set) error {
			wait, cancel := clk.WithTimeout(ctx, updateTimeout)
			defer cancel()
			if err := set.WaitInitialized(wait); err != nil {
				// The issuers may become reachable: the content is tried again at the next read.
				return errors.Join(err, set.HealthCheck())
			}
			return nil
		},
		Stop:  (*Set).Close,
		Grace: func(*Set) time.Duration { return retireDelay },
		Log: func(o reload.Outcome[Set]) {
			switch o.Stage {
			case reload.Read:
				klog.ErrorS(o.Err, "failed to read authentication config file")
			case reload.Load:
				klog.ErrorS(o.Err, "failed to load authentication config")
			case reload.Ready:
				klog.ErrorS(o.Err, "failed to update authentication config")
			case reload.Reloaded:
				klog.InfoS("reloaded authentication config", "file", file, "jwtAuthenticators", o.Value.Len())
			}
		},
	}, set, applied)
	r.Start(ctx)
	return &Reloader{r}, nil
}

// AuthenticateToken asks the current authenticators.
func (r *Reloader) AuthenticateToken(ctx context.Context, token string) (*authn.UserInfo, bool, error) {
	return r.Current().AuthenticateToken(ctx, token)
}

// load validates data as the file's new content and starts its authenticators. Content that is
// not valid never will be: it is not tried again until it changes.
func load(ctx context.Context, file string, data []byte, anonymous *apiv1.AnonymousAuthConfig, clk clock.Clock) (*Set, error) {
	auth, err := config.ParseAuthentication(file, data)
	if err != nil {
		return nil, err
	}
	if !reflect.DeepEqual(auth.Config.Anonymous, anonymous) {
		return nil, fmt.Errorf("%s: %w", file, field.Forbidden(field.NewPath("anonymous"), "changed from initial configuration file"))
	}
	if err := CheckSupported(auth); err != nil {
		return nil, err
	}
	return NewSet(ctx, auth, clk)
}
