package jwt

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"orch.io/orch/components/authn/jwt/jwttest"
)

// issuerPlaceholder in a fuzzed payload stands for the test provider's URL, whose port changes
// from run to run, so committed inputs keep reaching past the issuer check.
const issuerPlaceholder = "$ISSUER"

// maxAuthenticateTime flags a token that makes verification crawl.
const maxAuthenticateTime = 5 * time.Second

// FuzzAuthenticateToken feeds the JWT path tokens of every shape: raw strings, compact tokens
// built from a fuzzed header, payload and signature, and fuzzed payloads the provider's key signs
// (sign), which reach the claim mappings and CEL programs. Not one may get in, and none may panic
// or hang: the last user rule can never hold, so even a correctly signed token is refused.
//
// make fuzz-jwt runs it for 5 minutes.
func FuzzAuthenticateToken(f *testing.F) {
	e := newEnv(f)
	c := e.jwtConfig()
	c["issuer"].(map[string]any)["audiences"] = []string{"orch", "other"}
	c["issuer"].(map[string]any)["audienceMatchPolicy"] = "MatchAny"
	c["claimValidationRules"] = []map[string]any{
		{"claim": "hd", "requiredValue": "example.com"},
		{"expression": "claims.tenant == 'blue'", "message": "tenant must be blue"},
	}
	c["claimMappings"] = map[string]any{
		"username": map[string]any{"expression": "claims.?preferred_username.orValue(claims.sub)"},
		"groups":   map[string]any{"claim": "groups", "prefix": "g:"},
		"uid":      map[string]any{"expression": "claims.sub"},
		"extra":    []map[string]any{{"key": "example.com/roles", "valueExpression": "claims.?roles.orValue([])"}},
	}
	c["userValidationRules"] = []map[string]any{
		{"expression": "!user.username.startsWith('system:')"},
		{"expression": "size(user.username) < 0", "message": "nobody gets in while fuzzing"},
	}
	a := e.start(c)
	set := &Set{authenticators: []*Authenticator{a}}

	key := e.p.SigningKey()
	payload := func(changes map[string]any) []byte {
		claims := e.claims(changes)
		claims["iss"] = issuerPlaceholder
		claims["exp"] = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
		return mustJSON(f, claims)
	}
	header := func(alg string, kid string) []byte {
		return mustJSON(f, map[string]any{"alg": alg, "kid": kid, "typ": "JWT"})
	}
	// A correctly signed token that fails only the tenant rule, split in its parts.
	signed := e.p.Token(f, e.claims(map[string]any{"hd": "example.com", "tenant": "red", "groups": []string{"a"}, "exp": time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).Unix()}))
	parts := strings.Split(signed, ".")
	signedHeader, _ := base64.RawURLEncoding.DecodeString(parts[0])
	signedPayload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	signature, _ := base64.RawURLEncoding.DecodeString(parts[2])
	signedPayload = bytes.ReplaceAll(signedPayload, []byte(e.p.URL), []byte(issuerPlaceholder))

	f.Add(signedHeader, signedPayload, signature, "", false)
	f.Add(header("none", key.KeyID), payload(nil), []byte{}, "", false)
	f.Add(header("HS256", key.KeyID), payload(nil), []byte("0123456789abcdef0123456789abcdef"), "", false)
	f.Add(header("RS256", "unknown"), payload(map[string]any{"hd": "example.com", "tenant": "blue"}), signature, "", false)
	f.Add(header("ES256", key.KeyID), payload(map[string]any{"aud": "other", "nbf": 1}), signature[:64], "", false)
	f.Add([]byte{}, []byte{}, []byte{}, "a.b.c", false)
	f.Add([]byte{}, []byte{}, []byte{}, `{"payload":"e30","signatures":[{"protected":"e30","signature":""}]}`, false)
	f.Add([]byte{}, []byte{}, []byte{}, signed, false)
	f.Add([]byte{}, []byte{}, []byte{}, jwttest.Sign(f, e.p.NewKey(f, jose.ES256), e.claims(nil)), false)
	// Signed by the provider: these reach the mappings and rules.
	valid := map[string]any{"hd": "example.com", "tenant": "blue", "groups": []string{"a", ""}, "roles": []string{"r"}, "jti": "j"}
	f.Add([]byte{}, payload(valid), []byte{}, "", true)
	f.Add([]byte{}, payload(map[string]any{"hd": "example.com", "tenant": "blue", "preferred_username": "system:x"}), []byte{}, "", true)
	f.Add([]byte{}, payload(map[string]any{"hd": "example.com", "tenant": "blue", "groups": map[string]any{"x": 1}, "roles": []any{1, nil}, "preferred_username": 5}), []byte{}, "", true)
	f.Add([]byte{}, payload(map[string]any{"hd": 1, "tenant": []string{"blue"}, "sub": ""}), []byte{}, "", true)

	// Only the rule that can never hold stops the valid seed: the signed seeds reach every mapping.
	withIssuer := func(p []byte) []byte { return bytes.ReplaceAll(p, []byte(issuerPlaceholder), []byte(e.p.URL)) }
	if _, _, err := set.AuthenticateToken(context.Background(), jwttest.SignPayload(f, key, withIssuer(payload(valid)), "")); err == nil || !strings.Contains(err.Error(), "nobody gets in while fuzzing") {
		f.Fatalf("the valid seed: %v, want the last user rule to refuse it", err)
	}

	f.Fuzz(func(t *testing.T, header, payload, signature []byte, raw string, sign bool) {
		payload = withIssuer(payload)
		token := raw
		switch {
		case sign:
			token = jwttest.SignPayload(t, key, payload, "")
		case token == "":
			token = b64(header) + "." + b64(payload) + "." + b64(signature)
		}
		watchdog := time.AfterFunc(maxAuthenticateTime, func() {
			panic("AuthenticateToken still running after " + maxAuthenticateTime.String() + " on " + token)
		})
		user, ok, err := set.AuthenticateToken(context.Background(), token)
		watchdog.Stop()
		if ok || user != nil {
			t.Fatalf("token %q got in as %+v", token, user)
		}
		// No opinion is only for tokens of another issuer or no JWT at all.
		if err == nil && hasCorrectIssuer(e.p.URL, token) {
			t.Fatalf("token %q of the issuer refused without a reason", token)
		}
	})
}
