package kmsv2

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/google/uuid"
	kmsservice "k8s.io/kms/pkg/service"

	"orch.io/orch/components/apiserver/storage/value"
)

// Kubernetes' pacing of a KMS v2 plugin (encryptionconfig and kmsv2 packages): status is polled
// every minute while healthy and every 10s while not; a write DEK stays usable 3 minutes past the
// last status that vouched for its key ID, so a plugin outage longer than that fails writes rather
// than letting a rotation of the key encryption key go unnoticed; health answers are cached 20s
// when good and 3s when bad; unwrapped DEKs are cached a day.
const (
	KMSAPIVersionV2      = "v2"
	KMSAPIVersionV2beta1 = "v2beta1"

	PositivePollInterval = time.Minute
	NegativePollInterval = 10 * time.Second
	WriteDEKMaxTTL       = 3 * time.Minute
	healthzPositiveTTL   = 20 * time.Second
	healthzNegativeTTL   = 3 * time.Second
	dekCacheTTL          = 24 * time.Hour
)

// state is the DEK source writes use, and the key ID that wraps it.
type state struct {
	transformer value.Transformer
	object      EncryptedObject // everything but EncryptedData
	cacheKey    string
	expiration  time.Time
}

// Provider is one KMS v2 provider: its plugin, its write DEK source, its cache of unwrapped DEKs
// and its health.
type Provider struct {
	name    string
	service kmsservice.Service
	clock   clock.Clock
	state   atomic.Pointer[state]
	cache   *dekCache

	mu      sync.Mutex // serializes status checks
	lastErr error
	lastAt  time.Time
	ttl     time.Duration
	version string
}

// NewProvider checks the plugin once (a healthy plugin gives the provider its DEK before the
// server serves) and keeps polling its status until ctx ends.
func NewProvider(ctx context.Context, name string, service kmsservice.Service, clk clock.Clock) *Provider {
	p := &Provider{name: name, service: service, clock: clk, cache: newDEKCache(clk)}
	interval := PositivePollInterval
	if err := p.Check(ctx); err != nil {
		interval = NegativePollInterval
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-clk.After(interval):
			}
			interval = PositivePollInterval
			if err := p.Check(ctx); err != nil {
				interval = NegativePollInterval
			}
		}
	}()
	return p
}

// Check is the provider's health (kms-provider-N): the plugin's Status, answered within the
// provider's timeout, healthy, of API v2, with a valid key ID, for which the provider holds a DEK.
func (p *Provider) Check(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clock.Now()
	if !p.lastAt.IsZero() && now.Sub(p.lastAt) < p.ttl {
		return p.lastErr
	}
	err := p.check(ctx)
	p.lastErr, p.lastAt, p.ttl = err, now, healthzPositiveTTL
	if err != nil {
		p.ttl = healthzNegativeTTL
	}
	return err
}

func (p *Provider) check(ctx context.Context) error {
	resp, err := p.service.Status(ctx)
	if err != nil {
		return fmt.Errorf("failed to perform status section of the healthz check for KMS Provider %s, error: %w", p.name, err)
	}
	var errs []error
	if resp.Healthz != "ok" {
		errs = append(errs, fmt.Errorf("got unexpected healthz status: %s", resp.Healthz))
	}
	if resp.Version != KMSAPIVersionV2 && resp.Version != KMSAPIVersionV2beta1 {
		errs = append(errs, fmt.Errorf("expected KMSv2 API version %s, got %s", KMSAPIVersionV2, resp.Version))
	} else {
		if p.version == "" {
			p.version = resp.Version
		}
		if p.version != resp.Version {
			errs = append(errs, fmt.Errorf("KMSv2 API version should not change after the initial status response version %s, got %s", p.version, resp.Version))
		}
	}
	if err := ValidateKeyID(resp.KeyID); err != nil {
		errs = append(errs, fmt.Errorf("got invalid KMSv2 KeyID hash %q: %w", hashOf(resp.KeyID), err))
	} else if err := p.rotateOnKeyIDChange(ctx, resp.KeyID); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kmsv2 Provider %s is not healthy, error: %w", p.name, err)
	}
	return nil
}

// rotateOnKeyIDChange extends the write DEK's life while the plugin's key ID is the one that
// wrapped it, and wraps a new locally generated DEK seed when the key ID changed. On failure the
// current DEK stays in use until it expires.
func (p *Provider) rotateOnKeyIDChange(ctx context.Context, statusKeyID string) error {
	expiration := p.clock.Now().Add(WriteDEKMaxTTL)
	cur := p.state.Load()
	if cur != nil && cur.object.KeyID == statusKeyID {
		next := *cur
		next.expiration = expiration
		p.state.Store(&next)
		return nil
	}
	seed := make([]byte, value.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return err
	}
	transformer, err := value.NewHKDFExtendedNonceGCM(seed)
	if err != nil {
		return err
	}
	resp, err := p.service.Encrypt(ctx, uuid.NewString(), seed)
	if err != nil {
		return fmt.Errorf("failed to rotate DEK: failed to encrypt DEK, error: %w", err)
	}
	obj := EncryptedObject{KeyID: resp.KeyID, EncryptedDEKSource: resp.Ciphertext, Annotations: resp.Annotations, DEKSourceType: HKDFSHA256XNonceAESGCMSeed, EncryptedData: []byte{0}}
	if err := obj.Validate(); err != nil {
		return fmt.Errorf("failed to rotate DEK: %w", err)
	}
	if resp.KeyID != statusKeyID {
		return fmt.Errorf("failed to rotate DEK: the plugin encrypted with key ID hash %q while its status reports %q", hashOf(resp.KeyID), hashOf(statusKeyID))
	}
	obj.EncryptedData = nil
	key := cacheKey(&obj)
	p.cache.set(key, transformer)
	p.state.Store(&state{transformer: transformer, object: obj, cacheKey: key, expiration: expiration})
	return nil
}

// Transformer is the provider's envelope transformer.
func (p *Provider) Transformer() value.Transformer { return envelope{p} }

type envelope struct{ p *Provider }

func (e envelope) TransformToStorage(ctx context.Context, data, ad []byte) ([]byte, error) {
	p := e.p
	st := p.state.Load()
	if st == nil {
		return nil, fmt.Errorf("kms provider %s has no DEK to encrypt with: its plugin has not answered a status call", p.name)
	}
	if now := p.clock.Now(); now.After(st.expiration) {
		return nil, fmt.Errorf("encryptedDEKSource with keyID hash %q expired at %s (current time is %s)", hashOf(st.object.KeyID), st.expiration.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	// Keeps the write DEK in the cache (and lets the cache collect expired ones).
	p.cache.set(st.cacheKey, st.transformer)
	out, err := st.transformer.TransformToStorage(ctx, data, ad)
	if err != nil {
		return nil, err
	}
	obj := st.object
	obj.EncryptedData = out
	if err := obj.Validate(); err != nil {
		return nil, err
	}
	return obj.Marshal(), nil
}

func (e envelope) TransformFromStorage(ctx context.Context, data, ad []byte) ([]byte, bool, error) {
	p := e.p
	obj, err := Unmarshal(data)
	if err != nil {
		return nil, false, err
	}
	if err := obj.Validate(); err != nil {
		return nil, false, err
	}
	key := cacheKey(obj)
	transformer := p.cache.get(key)
	if transformer == nil {
		dek, err := p.service.Decrypt(ctx, uuid.NewString(), &kmsservice.DecryptRequest{Ciphertext: obj.EncryptedDEKSource, KeyID: obj.KeyID, Annotations: obj.Annotations})
		if err != nil {
			return nil, false, fmt.Errorf("failed to decrypt DEK, error: %w", err)
		}
		if obj.DEKSourceType == HKDFSHA256XNonceAESGCMSeed {
			transformer, err = value.NewHKDFExtendedNonceGCM(dek)
		} else {
			transformer, err = value.NewGCM(dek)
		}
		if err != nil {
			return nil, false, err
		}
		p.cache.set(key, transformer)
	}
	out, _, err := transformer.TransformFromStorage(ctx, obj.EncryptedData, ad)
	if err != nil {
		return nil, false, err
	}
	// A value wrapped by another key ID than the one writing now is stale: rewriting moves it.
	st := p.state.Load()
	stale := st == nil || obj.KeyID != st.object.KeyID || obj.DEKSourceType != st.object.DEKSourceType
	return out, stale, nil
}

// cacheKey identifies a wrapped DEK: its type, ciphertext, key ID and annotations, each length
// prefixed, hashed so the cache holds no ciphertext.
func cacheKey(o *EncryptedObject) string {
	h := sha256.New()
	field := func(b []byte) {
		_ = binary.Write(h, binary.BigEndian, uint32(len(b)))
		h.Write(b)
	}
	_ = binary.Write(h, binary.BigEndian, uint32(o.DEKSourceType))
	field(o.EncryptedDEKSource)
	field([]byte(o.KeyID))
	names := make([]string, 0, len(o.Annotations))
	for k := range o.Annotations {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		field([]byte(k))
		field(o.Annotations[k])
	}
	return string(h.Sum(nil))
}

// hashOf is how Kubernetes names a key ID in errors and logs, so the ID itself is not disclosed.
func hashOf(keyID string) string {
	if keyID == "" {
		return ""
	}
	return fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(keyID)))
}

// dekCache holds unwrapped DEKs for a day after their last use.
type dekCache struct {
	clock   clock.Clock
	mu      sync.Mutex
	entries map[string]dekEntry
	swept   time.Time
}

type dekEntry struct {
	transformer value.Transformer
	expires     time.Time
}

func newDEKCache(clk clock.Clock) *dekCache {
	return &dekCache{clock: clk, entries: map[string]dekEntry{}}
}

func (c *dekCache) get(key string) value.Transformer {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || c.clock.Now().After(e.expires) {
		return nil
	}
	return e.transformer
}

func (c *dekCache) set(key string, t value.Transformer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	c.entries[key] = dekEntry{transformer: t, expires: now.Add(dekCacheTTL)}
	if now.Sub(c.swept) >= time.Minute {
		c.swept = now
		for k, e := range c.entries {
			if now.After(e.expires) {
				delete(c.entries, k)
			}
		}
	}
}
