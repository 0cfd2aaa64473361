package jwt

import (
	"context"
	"strings"
	"testing"
	"time"

	"orch.io/orch/components/authn/jwt/jwttest"
)

// The authenticators of a configuration are asked in order; each answers for its own issuer only.
func TestSetOrderAndIssuers(t *testing.T) {
	first, second := newEnv(t), newEnv(t)
	second.clk = first.clk
	c2 := second.jwtConfig()
	c2["claimMappings"] = map[string]any{"username": map[string]any{"claim": "sub", "prefix": "second:"}}
	auth := parse(t, first.jwtConfig(), c2)
	set, err := NewSet(context.Background(), auth, first.clk)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(set.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := set.WaitInitialized(ctx); err != nil {
		t.Fatalf("WaitInitialized: %v (%v)", err, set.HealthCheck())
	}
	if set.Len() != 2 || set.HealthCheck() != nil {
		t.Fatalf("Len %d, HealthCheck %v", set.Len(), set.HealthCheck())
	}
	if u := expectUser(t, set, first.token(nil)); u.Name != "oidc:alice" {
		t.Errorf("first issuer's token: %q", u.Name)
	}
	if u := expectUser(t, set, second.token(nil)); u.Name != "second:alice" {
		t.Errorf("second issuer's token: %q", u.Name)
	}
	// A token of the second issuer signed with the first's key: the second authenticator's error
	// is final.
	forged := jwttest.Sign(t, first.p.SigningKey(), second.claims(nil))
	expectRejected(t, set, forged, "failed to verify id token signature")
	noOpinion(t, set, first.token(map[string]any{"iss": "https://third.example.com"}))
}

func TestSetClose(t *testing.T) {
	e := newEnv(t)
	e.p.ReportIssuer("https://elsewhere.example.com")
	set, err := NewSet(context.Background(), parse(t, e.jwtConfig()), e.clk)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first discovery", func() bool { return len(e.p.DiscoveryPaths()) == 1 })
	set.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := set.WaitInitialized(ctx); err == nil {
		t.Fatal("a closed set initialized")
	}
	// Closed, the authenticator retries discovery no more.
	e.p.ReportIssuer(e.p.URL)
	e.clk.Add(discoveryRetryInterval)
	time.Sleep(50 * time.Millisecond)
	if n := len(e.p.DiscoveryPaths()); n != 1 {
		t.Fatalf("%d discoveries after Close, want 1", n)
	}
	if err := set.HealthCheck(); err == nil || !strings.Contains(err.Error(), "is not healthy") {
		t.Fatalf("HealthCheck = %v", err)
	}
}
