package conformance

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"time"

	"orch.io/orch/conformance/target"
)

// logWait bounds the wait for a line in a started server's log.
const logWait = 20 * time.Second

// tokenAudience is the audience the scenarios' authenticators trust and their tokens carry.
const tokenAudience = "conformance"

func oidcSteps() []StepDef {
	return []StepDef{
		{`^an OIDC provider "([^"]*)"$`, func(w *World) any { return w.startProvider }},
		{`^the provider "([^"]*)" reports the issuer "([^"]*)"$`, func(w *World) any { return w.providerReportsIssuer }},
		{`^an AuthenticationConfiguration trusting "([^"]*)"$`, func(w *World) any { return w.trustProvider }},
		{`^it also trusts "([^"]*)"$`, func(w *World) any { return w.trustProvider }},
		{`^the JWT authenticator for "([^"]*)" is initialized$`, func(w *World) any { return w.authenticatorInitialized }},
		{`^the JWT authenticator for "([^"]*)" does not initialize, logging "([^"]*)"$`, func(w *World) any { return w.authenticatorFails }},
		{`^I list events with a token from "([^"]*)" with claims (.+)$`, func(w *World) any { return w.listWithToken }},
		{`^I list events with a token from "([^"]*)" signed with a key it does not publish$`, func(w *World) any { return w.listWithForeignKey }},
		{`^I list events with a token for "([^"]*)" signed by "([^"]*)"$`, func(w *World) any { return w.listWithForgedToken }},
		{`^a token from "([^"]*)" with claims (.+) authenticates as (.+)$`, func(w *World) any { return w.tokenAuthenticatesAs }},
		{`^the API server logs "([^"]*)"$`, func(w *World) any { return w.serverLogs }},
		{`^the provider "([^"]*)" served discovery at "([^"]*)" only$`, func(w *World) any { return w.discoveryServedAt }},
	}
}

// oidcProvider is an OpenID Connect provider over HTTPS with a certificate of its own: discovery at
// /.well-known/openid-configuration and /custom-discovery, one RS256 key at /jwks.
type oidcProvider struct {
	srv *httptest.Server
	key *rsa.PrivateKey
	kid string

	mu         sync.Mutex
	issuer     string   // what discovery reports
	discovered []string // the paths discovery was served at
}

func (w *World) startProvider(name string) error {
	if _, ok := w.providers[name]; ok {
		return fmt.Errorf("the OIDC provider %q exists already", name)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	p := &oidcProvider{key: key, kid: name + "-" + w.suffix}
	p.srv = httptest.NewTLSServer(http.HandlerFunc(p.serve))
	p.issuer = p.srv.URL
	w.cleanup = append(w.cleanup, p.srv.Close)
	if w.providers == nil {
		w.providers = map[string]*oidcProvider{}
	}
	w.providers[name] = p
	return nil
}

func (p *oidcProvider) serve(rw http.ResponseWriter, r *http.Request) {
	var body any
	switch r.URL.Path {
	case "/.well-known/openid-configuration", "/custom-discovery":
		p.mu.Lock()
		p.discovered = append(p.discovered, r.URL.Path)
		issuer := p.issuer
		p.mu.Unlock()
		body = map[string]any{"issuer": issuer, "jwks_uri": p.srv.URL + "/jwks", "id_token_signing_alg_values_supported": []string{"RS256"}}
	case "/jwks":
		b64 := base64.RawURLEncoding.EncodeToString
		body = map[string]any{"keys": []any{map[string]any{
			"kty": "RSA", "alg": "RS256", "use": "sig", "kid": p.kid,
			"n": b64(p.key.N.Bytes()), "e": b64(big.NewInt(int64(p.key.E)).Bytes()),
		}}}
	default:
		http.NotFound(rw, r)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(rw).Encode(body)
}

// caPEM is the certificate the provider serves with, for certificateAuthority.
func (p *oidcProvider) caPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.srv.Certificate().Raw}))
}

// sign makes a compact RS256 JWS of claims with key, naming kid.
func sign(key *rsa.PrivateKey, kid string, claims map[string]any) (string, error) {
	header, err := json.Marshal(map[string]any{"alg": "RS256", "kid": kid, "typ": "JWT"})
	if err != nil {
		return "", err
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	b64 := base64.RawURLEncoding.EncodeToString
	signed := b64(header) + "." + b64(payload)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return signed + "." + b64(sig), nil
}

func (w *World) provider(name string) (*oidcProvider, error) {
	p, ok := w.providers[name]
	if !ok {
		return nil, fmt.Errorf("no OIDC provider %q: start with \"an OIDC provider %q\"", name, name)
	}
	return p, nil
}

func (w *World) providerReportsIssuer(name, issuer string) error {
	p, err := w.provider(name)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.issuer = issuer
	return nil
}

// trustProvider adds a JWT authenticator for the provider to the scenario's
// AuthenticationConfiguration, starting one when there is none: the provider's URL and CA, the
// audience the tokens carry, usernames from sub prefixed with "<name>:".
func (w *World) trustProvider(name string) error {
	p, err := w.provider(name)
	if err != nil {
		return err
	}
	if w.doc == nil {
		v, err := w.t.Profile.ConfigAPIVersion()
		if err != nil {
			return err
		}
		w.doc = map[string]any{"apiVersion": v, "kind": "AuthenticationConfiguration", "jwt": []any{}}
	}
	list, ok := w.doc["jwt"].([]any)
	if !ok {
		return fmt.Errorf("the scenario's configuration is no AuthenticationConfiguration")
	}
	w.doc["jwt"] = append(list, map[string]any{
		"issuer":        map[string]any{"url": p.srv.URL, "audiences": []any{tokenAudience}, "certificateAuthority": p.caPEM()},
		"claimMappings": map[string]any{"username": map[string]any{"claim": "sub", "prefix": name + ":"}},
	})
	return nil
}

// serverLog is what the scenario's API server has logged so far.
func (w *World) serverLog() (string, error) {
	if w.server == nil {
		return "", fmt.Errorf("no API server of the scenario is running: %v", w.result)
	}
	return w.server.Log()
}

// waitLog polls the server's log until a line of it holds every one of texts.
func (w *World) waitLog(texts ...string) error {
	deadline := time.Now().Add(logWait)
	for {
		log, err := w.serverLog()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(log, "\n") {
			if containsAll(line, texts) {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the API server logged no line with %q within %s:\n%s", texts, logWait, target.Tail(log))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func containsAll(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

func (w *World) authenticatorInitialized(name string) error {
	p, err := w.provider(name)
	if err != nil {
		return err
	}
	if format := w.t.Profile.APIServer.JWTReadyLog; format != "" {
		return w.waitLog(fmt.Sprintf(format, p.srv.URL))
	}
	deadline := time.Now().Add(logWait)
	for !p.discoveryServed() {
		if time.Now().After(deadline) {
			return fmt.Errorf("the API server did not read the discovery of %q within %s", name, logWait)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The authenticator takes the keys' address from the discovery it has just read.
	time.Sleep(time.Second)
	return nil
}

func (p *oidcProvider) discoveryServed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.discovered) > 0
}

func (w *World) authenticatorFails(name, text string) error {
	p, err := w.provider(name)
	if err != nil {
		return err
	}
	// The issuer's URL, however the server quotes it (Kubernetes names it in the URL it fetched).
	return w.waitLog("initializing plugin", p.srv.URL, text)
}

func (w *World) serverLogs(text string) error { return w.waitLog(text) }

// claims are a valid token's claims for the provider (iss, aud, exp, iat, sub "alice") with the
// given JSON object laid over them; a null removes a claim.
func (w *World) claims(p *oidcProvider, over string) (map[string]any, error) {
	now := time.Now()
	c := map[string]any{"iss": p.srv.URL, "aud": tokenAudience, "exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "sub": "alice"}
	var o map[string]any
	if err := json.Unmarshal([]byte(over), &o); err != nil {
		return nil, fmt.Errorf("claims %s: %w", over, err)
	}
	for k, v := range o {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	return c, nil
}

// token is p's claims (its defaults, changed by over) signed with key under p's key id.
func (w *World) token(p *oidcProvider, over string, key *rsa.PrivateKey) (string, error) {
	c, err := w.claims(p, over)
	if err != nil {
		return "", err
	}
	return sign(key, p.kid, c)
}

// listWithBearer lists events on the scenario's server with token as the bearer token.
func (w *World) listWithBearer(token string) error {
	creds := w.creds
	w.creds, w.bearer = "bearer", token
	defer func() { w.creds = creds }()
	return w.request(http.MethodGet, w.eventPath(w.namespace(""), ""), nil, "")
}

func (w *World) listWithToken(name, over string) error {
	p, err := w.provider(name)
	if err != nil {
		return err
	}
	token, err := w.token(p, over, p.key)
	if err != nil {
		return err
	}
	return w.listWithBearer(token)
}

func (w *World) listWithForeignKey(name string) error {
	p, err := w.provider(name)
	if err != nil {
		return err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	token, err := w.token(p, "{}", key)
	if err != nil {
		return err
	}
	return w.listWithBearer(token)
}

// listWithForgedToken presents a token with the claims of issuer signed by signer's key.
func (w *World) listWithForgedToken(issuer, signer string) error {
	p, err := w.provider(issuer)
	if err != nil {
		return err
	}
	s, err := w.provider(signer)
	if err != nil {
		return err
	}
	token, err := w.token(p, "{}", s.key)
	if err != nil {
		return err
	}
	return w.listWithBearer(token)
}

// tokenAuthenticatesAs asks the scenario's server, as its administrator, who the token is
// (TokenReview) and compares username, uid, groups and extra with want; a field want leaves out
// must be empty.
func (w *World) tokenAuthenticatesAs(name, over, want string) error {
	p, err := w.provider(name)
	if err != nil {
		return err
	}
	token, err := w.token(p, over, p.key)
	if err != nil {
		return err
	}
	var expected map[string]any
	if err := json.Unmarshal([]byte(want), &expected); err != nil {
		return fmt.Errorf("expected user %s: %w", want, err)
	}
	group := w.t.Profile.APIServer.AuthenticationGroup
	if group == "" {
		return fmt.Errorf("profile %s: apiserver.authenticationGroup is needed to review tokens", w.t.Profile.Name)
	}
	review := map[string]any{"apiVersion": group + "/v1", "kind": "TokenReview", "spec": map[string]any{"token": token}}
	if err := w.request(http.MethodPost, "/apis/"+group+"/v1/tokenreviews", review, "application/json"); err != nil {
		return err
	}
	if w.http.code != http.StatusCreated {
		return fmt.Errorf("TokenReview: %s", w.http)
	}
	status, _ := w.http.obj["status"].(map[string]any)
	if status["authenticated"] != true {
		return fmt.Errorf("the token is not authenticated: %s", w.http)
	}
	user, _ := status["user"].(map[string]any)
	for _, field := range []string{"username", "uid", "groups", "extra"} {
		got, exp := user[field], expected[field]
		if empty(got) && empty(exp) {
			continue
		}
		if !reflect.DeepEqual(got, exp) {
			return fmt.Errorf("user %s: got %v, want %v (%s)", field, got, exp, w.http)
		}
	}
	return nil
}

func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

func (w *World) discoveryServedAt(name, path string) error {
	p, err := w.provider(name)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.discovered) == 0 {
		return fmt.Errorf("the provider %q served no discovery document", name)
	}
	for _, d := range p.discovered {
		if d != path {
			return fmt.Errorf("the provider %q served discovery at %v, want %q only", name, p.discovered, path)
		}
	}
	return nil
}
