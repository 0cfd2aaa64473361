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
