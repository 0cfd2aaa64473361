package jwt

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"orch.io/orch/components/authn"
	"orch.io/orch/components/authn/jwt/jwttest"
	"orch.io/orch/components/certs/certstest"
)

func TestValidTokenAuthenticates(t *testing.T) {
	e := newEnv(t)
	a := e.start(e.jwtConfig())
	user := expectUser(t, a, e.token(nil))
	want := &authn.UserInfo{Name: "oidc:alice"}
	if !reflect.DeepEqual(user, want) {
		t.Fatalf("user = %+v, want %+v", user, want)
	}
	if paths := e.p.DiscoveryPaths(); !slices.Equal(paths, []string{"/.well-known/openid-configuration"}) {
		t.Errorf("discovery read at %v, want the well-known path once", paths)
	}
}

// The negative matrix: every token here must be refused, with the reason in the error (which the
// server logs and never sends).
func TestRejectedTokens(t *testing.T) {
	e := newEnv(t)
	c := e.jwtConfig()
	c["claimValidationRules"] = []map[string]any{
		{"expression": "!has(claims.tenant) || claims.tenant == 'blue'", "message": "tenant must be blue"},
	}
	c["userValidationRules"] = []map[string]any{
		{"expression": "!user.username.startsWith('oidc:system:')", "message": "username must not be a system name"},
	}
	a := e.start(c)
	key := e.p.SigningKey()
	unpublished := e.p.NewKey(t, jose.RS256)
	// Past the rate limit, so the unknown key ID below does make the authenticator look again.
	e.clk.Add(minRefetchInterval)
	now := e.clk.Now()

	tests := []struct {
		name  string
		token string
		want  string
	}{
		{"alg none", unsigned(t, key.KeyID, e.claims(nil)), `unexpected signature algorithm "none"`},
		{"HS256 signed with the public key", hmacWithPublicKey(t, key, e.claims(nil)), `unexpected signature algorithm "HS256"`},
		{"wrong audience", e.token(map[string]any{"aud": []string{"other"}}), `expected audience in ["orch"] got ["other"]`},
		{"audience as a string", e.token(map[string]any{"aud": "other"}), "expected audience"},
		{"no audience", e.token(map[string]any{"aud": remove}), "expected audience"},
		{"expired", e.token(map[string]any{"exp": now.Add(-time.Second).Unix()}), "token is expired"},
		{"no exp", e.token(map[string]any{"exp": remove}), "token is expired"},
		{"exp not a number", e.token(map[string]any{"exp": "tomorrow"}), "failed to unmarshal claims"},
		{"not yet valid beyond the 5m leeway", e.token(map[string]any{"nbf": now.Add(6 * time.Minute).Unix()}), "before the nbf"},
		{"iat not a number", e.token(map[string]any{"iat": "now"}), "failed to unmarshal claims"},
		{"unknown kid", jwttest.Sign(t, unpublished, e.claims(nil)), "failed to verify id token signature"},
		{"tampered payload", tamper(t, e.token(nil), e.claims(map[string]any{"sub": "admin"})), "failed to verify id token signature"},
		{"missing username claim", e.token(map[string]any{"sub": remove}), `parse username claims "sub": claim not present`},
		{"sub not a string", e.token(map[string]any{"sub": []string{"a"}}), "failed to unmarshal claims"},
		{"claim rule false", e.token(map[string]any{"tenant": "red"}), "validation expression '!has(claims.tenant) || claims.tenant == 'blue'' failed: tenant must be blue"},
		{"claim rule erroring", e.token(map[string]any{"tenant": 3}), "error evaluating claim validation expression"},
		{"user rule false", e.token(map[string]any{"sub": "system:admin"}), "failed: username must not be a system name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectRejected(t, a, tt.token, tt.want)
		})
	}
	// The same token, unharmed, gets in: the matrix fails for the reasons it names.
	expectUser(t, a, e.token(map[string]any{"tenant": "blue", "nbf": now.Add(4 * time.Minute).Unix()}))
}

func noOpinion(t *testing.T, a authn.Token, token string) {
	t.Helper()
	user, ok, err := a.AuthenticateToken(context.Background(), token)
	if ok || user != nil || err != nil {
		t.Fatalf("AuthenticateToken = %+v, %v, %v; want no opinion", user, ok, err)
	}
}

// A token of another issuer, or no JWT at all, is none of this authenticator's business: it gets
// no opinion, and the union around it (proved at the server) turns that into 401.
func TestOtherTokensGetNoOpinion(t *testing.T) {
	e := newEnv(t)
	a := e.start(e.jwtConfig())
	for name, token := range map[string]string{
		"wrong iss":            e.token(map[string]any{"iss": "https://evil.example.com"}),
		"iss with a slash":     e.token(map[string]any{"iss": e.p.URL + "/"}),
		"no iss":               e.token(map[string]any{"iss": remove}),
		"opaque token":         "abcdef",
		"JSON serialization":   `{"payload":"e30","signatures":[]}`,
		"payload not base64":   "a.!!!.c",
		"payload not JSON":     "a." + b64([]byte("not json")) + ".c",
		"iss not a string":     "a." + b64([]byte(`{"iss":1}`)) + ".c",
		"two parts":            "a.b",
		"empty":                "",
		"four parts, same iss": e.token(nil) + ".d",
	} {
		t.Run(name, func(t *testing.T) { noOpinion(t, a, token) })
	}
}

func TestSigningAlgorithms(t *testing.T) {
	for _, alg := range []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512, jose.ES256, jose.ES384, jose.ES512} {
		t.Run(string(alg), func(t *testing.T) {
			e := newEnv(t)
			key := e.p.NewKey(t, alg)
			e.p.Publish(key)
			e.p.SignWith(key)
			a := e.start(e.jwtConfig())
			expectUser(t, a, e.token(nil))
		})
	}
}

// A token signed by another key that names a published key ID does not verify, and does not make
// the authenticator fetch the keys again: a known key ID that fails is a forgery, not a rotation.
func TestForeignKeyWithAKnownKeyID(t *testing.T) {
	e := newEnv(t)
	a := e.start(e.jwtConfig())
	e.clk.Add(minRefetchInterval)
	fetches := e.p.KeyFetches()
	ec := e.p.NewKey(t, jose.ES256)
	ec.KeyID = e.p.SigningKey().KeyID
	expectRejected(t, a, jwttest.Sign(t, ec, e.claims(nil)), "failed to verify id token signature")
	if got := e.p.KeyFetches(); got != fetches {
		t.Errorf("%d key fetches, want %d", got, fetches)
	}
}

func TestAudienceMatchAny(t *testing.T) {
	e := newEnv(t)
	c := e.jwtConfig()
	c["issuer"].(map[string]any)["audiences"] = []string{"orch", "other"}
	c["issuer"].(map[string]any)["audienceMatchPolicy"] = "MatchAny"
	a := e.start(c)
	for _, aud := range []any{"other", []string{"x", "orch"}, []string{"orch", "other", "more"}} {
		expectUser(t, a, e.token(map[string]any{"aud": aud}))
	}
	expectRejected(t, a, e.token(map[string]any{"aud": []string{"x", "y"}}), `expected audience in ["orch" "other"] got ["x" "y"]`)
}

// Kubernetes' key handling: a token naming an unknown key ID makes the authenticator fetch the
// key set again (at most every 10s on the clock), so a provider's rotation needs no restart; a
// key the provider removes stops verifying at the next periodic refresh.
func TestKeyRotation(t *testing.T) {
	e := newEnv(t)
	a := e.start(e.jwtConfig())
	old := e.p.SigningKey()
	oldToken := e.token(nil)
	expectUser(t, a, oldToken)
	fetches := e.p.KeyFetches()

	next := e.p.NewKey(t, jose.ES256)
	e.p.Publish(old, next)
	e.p.SignWith(next)
	newToken := e.token(nil)
	// The keys were fetched at this instant: the unknown key ID does not fetch them again yet.
	expectRejected(t, a, newToken, "failed to verify id token signature")
	if got := e.p.KeyFetches(); got != fetches {
		t.Fatalf("%d key fetches within the rate limit, want %d", got, fetches)
	}
	e.clk.Add(minRefetchInterval)
	expectUser(t, a, newToken)
	if got := e.p.KeyFetches(); got != fetches+1 {
		t.Fatalf("%d key fetches, want %d", got, fetches+1)
	}
	// A stream of forged key IDs costs the provider nothing more within the interval.
	for range 5 {
		expectRejected(t, a, jwttest.Sign(t, e.p.NewKey(t, jose.ES256), e.claims(nil)), "failed to verify")
	}
	expectUser(t, a, oldToken)
	if got := e.p.KeyFetches(); got != fetches+1 {
		t.Fatalf("%d key fetches after forged key IDs, want %d", got, fetches+1)
	}

	// The provider drops the old key; the periodic refresh notices.
	e.p.Publish(next)
	e.clk.Add(refreshInterval - minRefetchInterval)
	eventually(t, "periodic key refresh", func() bool { return e.p.KeyFetches() == fetches+2 })
	expectRejected(t, a, jwttest.Sign(t, old, e.claims(nil)), "failed to verify id token signature")
	expectUser(t, a, e.token(nil))
}

func TestDiscovery(t *testing.T) {
	t.Run("issuer mismatch, then fixed", func(t *testing.T) {
		e := newEnv(t)
		e.p.ReportIssuer("https://elsewhere.example.com")
		a := e.startUninitialized(e.jwtConfig())
		eventually(t, "the mismatch reported", func() bool {
			err := a.HealthCheck()
			return err != nil && strings.Contains(err.Error(), `issuer did not match the issuer returned by provider, expected "`+e.p.URL+`" got "https://elsewhere.example.com"`)
		})
		expectRejected(t, a, e.token(nil), "oidc: authenticator not initialized")
		// Discovery is tried again every 10s on the clock, so a provider fixed later is picked up.
		e.p.ReportIssuer(e.p.URL)
		e.clk.Add(discoveryRetryInterval)
		waitInitialized(t, a)
		if err := a.HealthCheck(); err != nil {
			t.Fatal(err)
		}
		expectUser(t, a, e.token(nil))
	})
	t.Run("discoveryURL used as written", func(t *testing.T) {
		e := newEnv(t)
		c := e.jwtConfig()
		c["issuer"].(map[string]any)["discoveryURL"] = e.p.URL + jwttest.DiscoveryPath
		a := e.start(c)
		expectUser(t, a, e.token(nil))
		if paths := e.p.DiscoveryPaths(); !slices.Equal(paths, []string{jwttest.DiscoveryPath}) {
			t.Errorf("discovery read at %v, want only %s", paths, jwttest.DiscoveryPath)
		}
	})
	t.Run("certificateAuthority verifies the connection", func(t *testing.T) {
		e := newEnv(t)
		c := e.jwtConfig()
		c["issuer"].(map[string]any)["certificateAuthority"] = string(certstest.NewCA(t, "other").PEM)
		a := e.startUninitialized(c)
		eventually(t, "the TLS failure reported", func() bool {
			err := a.HealthCheck()
			return err != nil && strings.Contains(err.Error(), "certificate signed by unknown authority")
		})
		expectRejected(t, a, e.token(nil), "not initialized")
		if paths := e.p.DiscoveryPaths(); len(paths) != 0 {
			t.Errorf("discovery served over an unverified connection: %v", paths)
		}
	})
	t.Run("system roots when certificateAuthority is unset", func(t *testing.T) {
		e := newEnv(t)
		c := e.jwtConfig()
		delete(c["issuer"].(map[string]any), "certificateAuthority")
		a := e.startUninitialized(c)
		eventually(t, "the TLS failure reported", func() bool {
			err := a.HealthCheck()
			return err != nil && strings.Contains(err.Error(), "certificate signed by unknown authority")
		})
	})
}

func TestEgressSelectorRefused(t *testing.T) {
	e := newEnv(t)
	c := e.jwtConfig()
	c["issuer"].(map[string]any)["egressSelectorType"] = "controlplane"
	auth := parse(t, c)
	_, err := New(context.Background(), auth.Config.JWT[0], auth.JWT[0], e.clk)
	if err == nil || !strings.Contains(err.Error(), `issuer.egressSelectorType "controlplane": orch-apiserver has no --egress-selector-config-file`) {
		t.Fatalf("New = %v, want the egress selector refused", err)
	}
	if err := CheckSupported(auth); err == nil || !strings.Contains(err.Error(), "auth.json: jwt[0].issuer.egressSelectorType") {
		t.Fatalf("CheckSupported = %v, want the field named", err)
	}
}

func TestProgramsRequired(t *testing.T) {
	e := newEnv(t)
	c := e.jwtConfig()
	c["claimMappings"].(map[string]any)["username"] = map[string]any{"expression": "claims.sub"}
	auth := parse(t, c)
	progs := auth.JWT[0]
	progs.Username = nil
	if _, err := New(context.Background(), auth.Config.JWT[0], progs, e.clk); err == nil {
		t.Fatal("New accepted an expression without its program")
	}
}
