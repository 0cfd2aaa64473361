package jwttest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	jose "github.com/go-jose/go-jose/v4"

	"orch.io/orch/components/certs/certstest"
)

// Provider is an OpenID Connect provider serving discovery at
// {URL}/.well-known/openid-configuration (and at {URL}/custom-discovery, for discoveryURL) and its
// keys at {URL}/jwks, over TLS with a certificate of its own CA.
type Provider struct {
	// URL is the issuer URL, https://127.0.0.1:<port>.
	URL string
	// CAPEM is the CA that signed the provider's serving certificate, for certificateAuthority.
	CAPEM []byte

	mu sync.Mutex
	// issuer is what discovery reports; URL unless a test makes it lie.
	issuer    string
	published []jose.JSONWebKey
	signing   *jose.JSONWebKey

	discoveryPaths []string
	keyFetches     atomic.Int64
}

// DiscoveryPath is the path a discoveryURL can name instead of the well-known one.
const DiscoveryPath = "/custom-discovery"

// NewProvider starts a provider with one RS256 key, published and used to sign, until the test
// ends.
func NewProvider(t testing.TB) *Provider {
	t.Helper()
	ca := certstest.NewCA(t, "oidc-ca")
	pair := ca.Server(t, "oidc")
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	p := &Provider{CAPEM: ca.PEM}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(p.serve))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	p.issuer = srv.URL
	key := p.NewKey(t, jose.RS256)
	p.Publish(key)
	p.SignWith(key)
	return p
}

func (p *Provider) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	issuer, keys := p.issuer, p.published
	p.mu.Unlock()
	var body any
	switch r.URL.Path {
	case "/.well-known/openid-configuration", DiscoveryPath:
		p.mu.Lock()
		p.discoveryPaths = append(p.discoveryPaths, r.URL.Path)
		p.mu.Unlock()
		body = map[string]any{
			"issuer":                                issuer,
			"jwks_uri":                              p.URL + "/jwks",
			"id_token_signing_alg_values_supported": []string{"RS256"},
		}
	case "/jwks":
		p.keyFetches.Add(1)
		public := make([]jose.JSONWebKey, len(keys))
		for i := range keys {
			public[i] = keys[i].Public()
		}
		body = jose.JSONWebKeySet{Keys: public}
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

var kids atomic.Int64

// NewKey makes a private key for alg (RS*, PS* or ES*) with a key ID of its own. It is neither
// published nor used to sign until the test says so.
func (p *Provider) NewKey(t testing.TB, alg jose.SignatureAlgorithm) *jose.JSONWebKey {
	t.Helper()
	var key crypto.Signer
	var err error
	switch alg {
	case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	case jose.ES256:
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case jose.ES384:
		key, err = ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	case jose.ES512:
		key, err = ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	default:
		t.Fatalf("jwttest: no key type for %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return &jose.JSONWebKey{Key: key, KeyID: fmt.Sprintf("key-%d", kids.Add(1)), Algorithm: string(alg), Use: "sig"}
}

// Publish replaces the key set the provider serves with keys.
func (p *Provider) Publish(keys ...*jose.JSONWebKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.published = p.published[:0:0]
	for _, k := range keys {
		p.published = append(p.published, *k)
	}
}

// SignWith makes key the one Token signs with.
func (p *Provider) SignWith(key *jose.JSONWebKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.signing = key
}

// ReportIssuer makes discovery report issuer instead of URL.
func (p *Provider) ReportIssuer(issuer string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.issuer = issuer
}

// DiscoveryPaths lists the paths of the discovery documents served, in order.
func (p *Provider) DiscoveryPaths() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.discoveryPaths...)
}

// SigningKey is the key Token signs with.
func (p *Provider) SigningKey() *jose.JSONWebKey {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.signing
}

// KeyFetches counts the key sets served.
func (p *Provider) KeyFetches() int { return int(p.keyFetches.Load()) }

// Token signs claims with the signing key, its key ID in the header.
func (p *Provider) Token(t testing.TB, claims map[string]any) string {
	t.Helper()
	p.mu.Lock()
	key := p.signing
	p.mu.Unlock()
	return Sign(t, key, claims)
}

// Sign signs claims as a compact JWS with key, naming the key's ID and algorithm in the header.
func Sign(t testing.TB, key *jose.JSONWebKey, claims map[string]any) string {
	t.Helper()
	payload, err := json.Marshal(claims)
	if err != nil {
		t.Fatal(err)
	}
	return SignPayload(t, key, payload, "JWT")
}

// SignPayload signs payload as it is, whatever it holds (a fuzz test's bytes), with key; typ, when
// not empty, is the typ of its header.
func SignPayload(t testing.TB, key *jose.JSONWebKey, payload []byte, typ jose.ContentType) string {
	t.Helper()
	var opts *jose.SignerOptions
	if typ != "" {
		opts = (&jose.SignerOptions{}).WithType(typ)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(key.Algorithm), Key: key}, opts)
	if err != nil {
		t.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	token, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return token
}
