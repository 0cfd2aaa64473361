package jwt

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/coreos/go-oidc/v3/oidc"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apis/apiserver/config"
	apiv1 "orch.io/orch/components/apis/apiserver/v1"
	"orch.io/orch/components/authn"
)

// discoveryRetryInterval is how often discovery is tried again until it succeeds, as Kubernetes
// polls: the server starts even when its identity provider is not reachable yet (for example when
// it runs on the cluster the server serves).
const discoveryRetryInterval = 10 * time.Second

// Authenticator verifies the tokens of one JWT authenticator of an AuthenticationConfiguration.
// It is safe for concurrent use.
type Authenticator struct {
	config    apiv1.JWTAuthenticator
	programs  config.JWTPrograms
	clock     clock.Clock
	client    *http.Client
	audiences sets.Set[string]
	// usesCEL says some mapping or rule is an expression, so claims are converted for CEL.
	usesCEL bool

	// verifier is nil until discovery and the first key fetch have succeeded.
	verifier    atomic.Pointer[oidc.IDTokenVerifier]
	health      atomic.Pointer[healthState]
	initialized chan struct{}
}

type healthState struct{ err error }

// New starts the authenticator of c, whose expressions programs holds compiled (as
// config.ParseAuthentication leaves them). Discovery runs in the background, tried again every
// 10s until it succeeds; until then tokens of this issuer are rejected. Everything it started ends
// with ctx, after which it must not be used.
func New(ctx context.Context, c apiv1.JWTAuthenticator, programs config.JWTPrograms, clk clock.Clock) (*Authenticator, error) {
	if err := checkSupported(c); err != nil {
		return nil, err
	}
	if err := checkPrograms(c, programs); err != nil {
		return nil, err
	}
	client, err := newClient(c.Issuer.CertificateAuthority)
	if err != nil {
		return nil, err
	}
	a := &Authenticator{
		config:      c,
		programs:    programs,
		clock:       clk,
		client:      client,
		audiences:   sets.New(c.Issuer.Audiences...),
		usesCEL:     usesCEL(programs),
		initialized: make(chan struct{}),
	}
	a.health.Store(&healthState{err: fmt.Errorf("oidc: authenticator for issuer %q is not initialized", c.Issuer.URL)})
	go a.run(ctx)
	return a, nil
}

// checkSupported refuses the fields this server cannot honour.
func checkSupported(c apiv1.JWTAuthenticator) error {
	if c.Issuer.EgressSelectorType != "" {
		return fmt.Errorf("issuer.egressSelectorType %q: orch-apiserver has no --egress-selector-config-file to define egress selections; remove the field", c.Issuer.EgressSelectorType)
	}
	return nil
}

// checkPrograms makes sure every expression of c comes with its compiled program.
func checkPrograms(c apiv1.JWTAuthenticator, p config.JWTPrograms) error {
	missing := func(expr string, prog *config.Program) bool { return expr != "" && prog == nil }
	if len(p.ClaimValidationRules) != len(c.ClaimValidationRules) || len(p.Extra) != len(c.ClaimMappings.Extra) ||
		len(p.UserValidationRules) != len(c.UserValidationRules) {
		return errors.New("the compiled programs do not match the authenticator's rules")
	}
	bad := missing(c.ClaimMappings.Username.Expression, p.Username) || missing(c.ClaimMappings.Groups.Expression, p.Groups) ||
		(c.ClaimMappings.UID != nil && missing(c.ClaimMappings.UID.Expression, p.UID))
	for i, r := range c.ClaimValidationRules {
		bad = bad || missing(r.Expression, p.ClaimValidationRules[i])
	}
	for i, e := range c.ClaimMappings.Extra {
		bad = bad || missing(e.ValueExpression, p.Extra[i])
	}
	for i, r := range c.UserValidationRules {
		bad = bad || missing(r.Expression, p.UserValidationRules[i])
	}
	if bad {
		return errors.New("an expression of the authenticator was not compiled")
	}
	return nil
}

func usesCEL(p config.JWTPrograms) bool {
	if p.Username != nil || p.Groups != nil || p.UID != nil {
		return true
	}
	for _, list := range [][]*config.Program{p.ClaimValidationRules, p.Extra} {
		for _, prog := range list {
			if prog != nil {
				return true
			}
		}
	}
	return false
}

func (a *Authenticator) run(ctx context.Context) {
	for {
		keys, err := a.initialize(ctx)
		if err == nil {
			klog.InfoS("JWT authenticator initialized", "issuer", a.config.Issuer.URL)
			// The ticker exists before anyone can see the authenticator initialized, so a test
			// that moves the clock on from then on sees every refresh.
			ticker := a.clock.Ticker(refreshInterval)
			defer ticker.Stop()
			close(a.initialized)
			keys.run(ctx, ticker.C)
			return
		}
		if ctx.Err() != nil {
			return
		}
		klog.ErrorS(err, "oidc authenticator: initializing plugin", "issuer", a.config.Issuer.URL)
		// Likewise the retry timer exists before the failure shows in HealthCheck.
		retry := a.clock.Timer(discoveryRetryInterval)
		a.health.Store(&healthState{err: err})
		select {
		case <-ctx.Done():
			retry.Stop()
			return
		case <-retry.C:
		}
	}
}

// initialize discovers the issuer's key set and fetches it.
func (a *Authenticator) initialize(ctx context.Context) (*keySet, error) {
	is := a.config.Issuer
	jwksURL, err := discover(ctx, a.client, discoveryLocation(is.URL, is.DiscoveryURL), is.URL)
	if err != nil {
		return nil, err
	}
	keys := &keySet{url: jwksURL, client: a.client, clock: a.clock}
	if err := keys.refresh(ctx, true); err != nil {
		return nil, err
	}
	a.verifier.Store(oidc.NewVerifier(is.URL, keys, &oidc.Config{
		// Audiences are matched below, against every audience of the configuration.
		SkipClientIDCheck:    true,
		SupportedSigningAlgs: signingAlgorithmNames,
		Now:                  a.clock.Now,
	}))
	a.health.Store(&healthState{})
	return keys, nil
}

// Initialized is closed once discovery and the first key fetch have succeeded.
func (a *Authenticator) Initialized() <-chan struct{} {
	return a.initialized
}

// HealthCheck answers nil once the authenticator can verify tokens, otherwise why it cannot.
func (a *Authenticator) HealthCheck() error {
	if err := a.health.Load().err; err != nil {
		return fmt.Errorf("oidc: authenticator for issuer %q is not healthy: %w", a.config.Issuer.URL, err)
	}
	return nil
}

// AuthenticateToken verifies token. A token whose (unverified) iss is not this issuer, or that is
// not a compact JWT at all, gets no opinion; any other failure is an error saying why, for the
// server's log only.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authn.UserInfo, bool, error) {
	if !hasCorrectIssuer(a.config.Issuer.URL, token) {
		return nil, false, nil
	}
	verifier := a.verifier.Load()
	if verifier == nil {
		return nil, false, errors.New("oidc: authenticator not initialized")
	}
	idToken, err := verifier.Verify(ctx, token)
	if err == nil && !a.audiences.HasAny(idToken.Audience...) {
		err = fmt.Errorf("oidc: expected audience in %q got %q", sets.List(a.audiences), idToken.Audience)
	}
	if err != nil {
		return nil, false, fmt.Errorf("oidc: verify token: %w", err)
	}
	var payload json.RawMessage
	if err := idToken.Claims(&payload); err != nil {
		return nil, false, fmt.Errorf("oidc: parse claims: %w", err)
	}
	user, err := a.user(payload)
	if err != nil {
		return nil, false, err
	}
	return user, true, nil
}

// hasCorrectIssuer reports whether token is a compact JWT whose unverified iss is iss, so that
// each token is verified by the one authenticator of its issuer.
func hasCorrectIssuer(iss, token string) bool {
	if strings.HasPrefix(strings.TrimSpace(token), "{") {
		return false
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var claims struct {
		// Not verified: only used to pick the authenticator.
		Issuer string `json:"iss"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return false
	}
	return claims.Issuer == iss
}
