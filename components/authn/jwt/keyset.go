package jwt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	jose "github.com/go-jose/go-jose/v4"
	"k8s.io/klog/v2"
)

// signingAlgorithms are the algorithms Kubernetes accepts from JWT issuers of an authentication
// configuration: the asymmetric RS, ES and PS families. "none" and the HMAC family are refused
// before any key is looked at, so a public key can never be used as an HMAC secret.
var signingAlgorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.ES256, jose.ES384, jose.ES512,
	jose.PS256, jose.PS384, jose.PS512,
}

// signingAlgorithmNames are signingAlgorithms as go-oidc's verifier takes them.
var signingAlgorithmNames = func() []string {
	names := make([]string, len(signingAlgorithms))
	for i, a := range signingAlgorithms {
		names[i] = string(a)
	}
	return names
}()

const (
	// minRefetchInterval rate-limits the fetches a token with an unknown key ID triggers, so a
	// stream of forged key IDs cannot turn the server into a load generator against the provider.
	minRefetchInterval = 10 * time.Second
	// refreshInterval is how often the key set is fetched regardless, so a key the provider
	// removed stops being accepted without a restart.
	refreshInterval = 10 * time.Minute
)

// errRateLimited says a fetch was skipped because the last attempt was too recent.
var errRateLimited = fmt.Errorf("oidc: keys fetched less than %v ago", minRefetchInterval)

// keySet is an issuer's JSON Web Key Set, kept in memory and fetched again on an unknown key ID
// (at most every minRefetchInterval) and every refreshInterval.
type keySet struct {
	url    string
	client *http.Client
	clock  clock.Clock

	// fetching serialises fetches and guards attempted.
	fetching  sync.Mutex
	attempted time.Time

	mu   sync.RWMutex
	keys []jose.JSONWebKey
}

// VerifySignature implements go-oidc's KeySet: it checks the signature of the compact JWS jwt and
// answers its payload. go-oidc's verifier has already refused any algorithm not allowed.
func (s *keySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	jws, err := jose.ParseSignedCompact(jwt, signingAlgorithms)
	if err != nil {
		return nil, fmt.Errorf("oidc: malformed jwt: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("oidc: multiple signatures on id token not supported")
	}
	kid := jws.Signatures[0].Header.KeyID
	payload, known, ok := s.verify(jws, kid)
	if ok {
		return payload, nil
	}
	// A known key ID whose key does not verify is a bad signature, not a rotation.
	if !known {
		if err := s.refresh(ctx, false); err != nil && !errors.Is(err, errRateLimited) {
			return nil, fmt.Errorf("fetching keys: %w", err)
		}
		if payload, _, ok = s.verify(jws, kid); ok {
			return payload, nil
		}
	}
	return nil, errors.New("failed to verify id token signature")
}

// verify tries the cached keys of kid (every key when kid is empty). known says a key with that
// non-empty ID is cached.
func (s *keySet) verify(jws *jose.JSONWebSignature, kid string) (payload []byte, known, ok bool) {
	s.mu.RLock()
	keys := s.keys
	s.mu.RUnlock()
	for i := range keys {
		if kid != "" && keys[i].KeyID != kid {
			continue
		}
		known = kid != ""
		if payload, err := jws.Verify(&keys[i]); err == nil {
			return payload, known, true
		}
	}
	return nil, known, false
}

// refresh fetches the key set. Unless forced, it does nothing (errRateLimited) when the last
// attempt, successful or not, is less than minRefetchInterval old. Callers that waited for
// another fetch in progress find its keys cached.
func (s *keySet) refresh(ctx context.Context, force bool) error {
	s.fetching.Lock()
	defer s.fetching.Unlock()
	now := s.clock.Now()
	if !force && !s.attempted.IsZero() && now.Sub(s.attempted) < minRefetchInterval {
		return errRateLimited
	}
	s.attempted = now
	keys, err := s.fetch(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.keys = keys
	s.mu.Unlock()
	return nil
}

func (s *keySet) fetch(ctx context.Context) ([]jose.JSONWebKey, error) {
	body, err := get(ctx, s.client, s.url)
	if err != nil {
		return nil, fmt.Errorf("oidc: get keys failed: %w", err)
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		return nil, fmt.Errorf("oidc: failed to decode keys: %w", err)
	}
	keys := make([]jose.JSONWebKey, 0, len(set.Keys))
	for i, raw := range set.Keys {
		// One key of a type this server cannot use must not cost it the others, as in go-oidc.
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil {
			klog.V(2).InfoS("Skipping a key of the JWKS", "url", s.url, "index", i, "err", err)
			continue
		}
		if k.Use == "enc" {
			continue
		}
		// Only public keys are kept: a symmetric key in a key set is never a verification key.
		if !k.IsPublic() {
			if k = k.Public(); !k.Valid() {
				continue
			}
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// run fetches the keys on every tick until ctx ends.
func (s *keySet) run(ctx context.Context, ticks <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
			if err := s.refresh(ctx, true); err != nil {
				klog.ErrorS(err, "Refreshing the keys of a JWT issuer", "url", s.url)
			}
		}
	}
}
