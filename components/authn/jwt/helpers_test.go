package jwt

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	jose "github.com/go-jose/go-jose/v4"

	"orch.io/orch/components/apis/apiserver/config"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authn/jwt/jwttest"
)

// base is the mock clock's start; tokens are minted relative to the mock clock.
var base = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

type env struct {
	t   testing.TB
	p   *jwttest.Provider
	clk *clock.Mock
}

func newEnv(t testing.TB) *env {
	t.Helper()
	clk := clock.NewMock()
	clk.Set(base)
	return &env{t: t, p: jwttest.NewProvider(t), clk: clk}
}

// jwtConfig is a JWT authenticator of the provider for audience "orch", the username being sub
// prefixed "oidc:".
func (e *env) jwtConfig() map[string]any {
	return map[string]any{
		"issuer": map[string]any{
			"url":                  e.p.URL,
			"certificateAuthority": string(e.p.CAPEM),
			"audiences":            []string{"orch"},
		},
		"claimMappings": map[string]any{"username": map[string]any{"claim": "sub", "prefix": "oidc:"}},
	}
}

// parse loads an AuthenticationConfiguration holding jwts through the config package, which
// validates and compiles it.
func parse(t testing.TB, jwts ...map[string]any) *config.Authentication {
	t.Helper()
	data, err := json.Marshal(map[string]any{
		"apiVersion": "apiserver.config.orch.io/v1",
		"kind":       "AuthenticationConfiguration",
		"jwt":        jwts,
	})
	if err != nil {
		t.Fatal(err)
	}
	auth, err := config.ParseAuthentication("auth.json", data)
	if err != nil {
		t.Fatal(err)
	}
	return auth
}

// startUninitialized starts the authenticator of c without waiting for discovery.
func (e *env) startUninitialized(c map[string]any) *Authenticator {
	e.t.Helper()
	auth := parse(e.t, c)
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	a, err := New(ctx, auth.Config.JWT[0], auth.JWT[0], e.clk)
	if err != nil {
		e.t.Fatal(err)
	}
	return a
}

// start starts the authenticator of c and waits until it can verify tokens.
func (e *env) start(c map[string]any) *Authenticator {
	e.t.Helper()
	a := e.startUninitialized(c)
	waitInitialized(e.t, a)
	return a
}

func waitInitialized(t testing.TB, a *Authenticator) {
	t.Helper()
	select {
	case <-a.Initialized():
	case <-time.After(10 * time.Second):
		t.Fatalf("authenticator not initialized after 10s: %v", a.HealthCheck())
	}
}

// eventually retries cond for up to 10s of real time: the authenticator's background work runs
// in goroutines of its own.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// claims are valid claims for the provider: issued now, expiring in an hour.
func (e *env) claims(changes map[string]any) map[string]any {
	now := e.clk.Now()
	c := map[string]any{
		"iss": e.p.URL,
		"aud": []string{"orch"},
		"sub": "alice",
		"iat": now.Unix(),
		"exp": now.Add(time.Hour).Unix(),
	}
	for k, v := range changes {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c
}

// remove marks a claim to delete in claims(changes); a JSON null is written with jsonNull.
var remove any

// jsonNull is a claim value marshalled as null.
var jsonNull = json.RawMessage("null")

func (e *env) token(changes map[string]any) string {
	e.t.Helper()
	return e.p.Token(e.t, e.claims(changes))
}

// expectUser authenticates token and requires success with user want.
func expectUser(t testing.TB, a authn.Token, token string) *authn.UserInfo {
	t.Helper()
	user, ok, err := a.AuthenticateToken(context.Background(), token)
	if err != nil || !ok {
		t.Fatalf("token rejected: ok=%v err=%v", ok, err)
	}
	return user
}

// expectRejected authenticates token and requires an error containing want.
func expectRejected(t testing.TB, a authn.Token, token, want string) {
	t.Helper()
	user, ok, err := a.AuthenticateToken(context.Background(), token)
	if ok || user != nil {
		t.Fatalf("token got in as %+v", user)
	}
	if err == nil {
		t.Fatalf("token rejected without an error, want one containing %q", want)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not contain %q", err, want)
	}
}

func b64(data []byte) string { return base64.RawURLEncoding.EncodeToString(data) }

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// unsigned is a token with alg none and no signature.
func unsigned(t testing.TB, kid string, claims map[string]any) string {
	header := mustJSON(t, map[string]any{"alg": "none", "typ": "JWT", "kid": kid})
	return b64(header) + "." + b64(mustJSON(t, claims)) + "."
}

// hmacWithPublicKey signs claims with HS256, the secret being the PEM of key's public half: the
// classic confusion attack against verifiers that let the token choose the algorithm.
func hmacWithPublicKey(t testing.TB, key *jose.JSONWebKey, claims map[string]any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(key.Public().Key)
	if err != nil {
		t.Fatal(err)
	}
	secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	return jwttest.Sign(t, &jose.JSONWebKey{Key: secret, KeyID: key.KeyID, Algorithm: string(jose.HS256)}, claims)
}

// tamper replaces the payload of a signed token, keeping its header and signature.
func tamper(t testing.TB, token string, claims map[string]any) string {
	parts := strings.Split(token, ".")
	return parts[0] + "." + b64(mustJSON(t, claims)) + "." + parts[2]
}
