package authn

import "context"

type audiencesKey struct{}

// WithAudiences returns a copy of ctx saying which token audiences the request accepts, as a
// TokenReview's spec.audiences do; audience-aware authenticators (service account tokens) check
// tokens against them rather than the API's own audiences.
func WithAudiences(ctx context.Context, audiences []string) context.Context {
	return context.WithValue(ctx, audiencesKey{}, audiences)
}

// AudiencesFrom returns the audiences WithAudiences stored in ctx; ok is false when there are none.
func AudiencesFrom(ctx context.Context) (audiences []string, ok bool) {
	audiences, ok = ctx.Value(audiencesKey{}).([]string)
	return audiences, ok
}

type grantedKey struct{}

// granted holds the audiences an authenticator authenticated a token for.
type granted struct {
	audiences []string
	set       bool
}

// WithGrantedAudiences returns a copy of ctx in which an audience-aware authenticator records the
// audiences it authenticated the token for (those of the token the request accepts), and a
// function that reads them; ok is false when no authenticator recorded any.
func WithGrantedAudiences(ctx context.Context) (context.Context, func() (audiences []string, ok bool)) {
	g := &granted{}
	return context.WithValue(ctx, grantedKey{}, g), func() ([]string, bool) { return g.audiences, g.set }
}

// GrantAudiences records in ctx, when it asks for them, the audiences a token was authenticated for.
func GrantAudiences(ctx context.Context, audiences []string) {
	if g, ok := ctx.Value(grantedKey{}).(*granted); ok {
		g.audiences, g.set = audiences, true
	}
}
