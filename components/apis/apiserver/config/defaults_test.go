package config

import (
	"testing"
	"time"
)

func TestWebhookDefaults(t *testing.T) {
	tests := []struct {
		fixture                  string
		authorizedTTL, unauthTTL time.Duration
		cacheAuthorized, cacheUn bool
	}{
		{"testdata/authorization/valid/webhook-defaults.yaml", 5 * time.Minute, 30 * time.Second, true, true},
		{"testdata/authorization/valid/webhook-full.yaml", 10 * time.Minute, time.Minute, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			a, err := LoadAuthorization(tt.fixture)
			if err != nil {
				t.Fatal(err)
			}
			w := a.Config.Authorizers[0].Webhook
			if w.AuthorizedTTL.Duration != tt.authorizedTTL || w.UnauthorizedTTL.Duration != tt.unauthTTL {
				t.Errorf("TTLs = %v/%v, want %v/%v", w.AuthorizedTTL.Duration, w.UnauthorizedTTL.Duration, tt.authorizedTTL, tt.unauthTTL)
			}
			if *w.CacheAuthorizedRequests != tt.cacheAuthorized || *w.CacheUnauthorizedRequests != tt.cacheUn {
				t.Errorf("caching = %v/%v, want %v/%v", *w.CacheAuthorizedRequests, *w.CacheUnauthorizedRequests, tt.cacheAuthorized, tt.cacheUn)
			}
		})
	}
}

func TestKMSDefaults(t *testing.T) {
	tests := []struct {
		fixture       string
		provider      int
		wantCacheSize *int32 // nil: must stay unset
		wantTimeout   time.Duration
	}{
		{"testdata/encryption/valid/kms-defaults.yaml", 0, new(int32(1000)), 3 * time.Second},
		{"testdata/encryption/valid/all-providers.yaml", 3, new(int32(-1)), 3 * time.Second},
		{"testdata/encryption/valid/all-providers.yaml", 4, nil, 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			e, err := LoadEncryption(tt.fixture)
			if err != nil {
				t.Fatal(err)
			}
			k := e.Config.Resources[0].Providers[tt.provider].KMS
			switch {
			case tt.wantCacheSize == nil && k.CacheSize != nil:
				t.Errorf("cachesize = %d, want unset for KMS v2", *k.CacheSize)
			case tt.wantCacheSize != nil && (k.CacheSize == nil || *k.CacheSize != *tt.wantCacheSize):
				t.Errorf("cachesize = %v, want %d", k.CacheSize, *tt.wantCacheSize)
			}
			if k.Timeout.Duration != tt.wantTimeout {
				t.Errorf("timeout = %v, want %v", k.Timeout.Duration, tt.wantTimeout)
			}
		})
	}
}

// TestUsernameMappingNotDefaulted shows that claim and prefix keep exactly what the file says.
func TestUsernameMappingNotDefaulted(t *testing.T) {
	a, err := LoadAuthentication("testdata/authentication/valid/expression-mappings.yaml")
	if err != nil {
		t.Fatal(err)
	}
	u := a.Config.JWT[0].ClaimMappings.Username
	if u.Claim != "" || u.Prefix != nil {
		t.Errorf("username claim %q prefix %v, want both unset", u.Claim, u.Prefix)
	}
	a, err = LoadAuthentication("testdata/authentication/valid/minimal-claim-mapping.yaml")
	if err != nil {
		t.Fatal(err)
	}
	u = a.Config.JWT[0].ClaimMappings.Username
	if u.Claim != "sub" || u.Prefix == nil || *u.Prefix != "" {
		t.Errorf("username claim %q prefix %v, want sub and an explicit empty prefix", u.Claim, u.Prefix)
	}
}
