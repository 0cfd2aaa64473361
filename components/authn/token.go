package authn

import (
	"context"
	"net/http"
)

// Token authenticates a bearer token. Its answers mean what an Authenticator's do: (nil, false,
// nil) is no opinion, a token of another kind.
type Token interface {
	AuthenticateToken(ctx context.Context, token string) (*UserInfo, bool, error)
}

// Bearer returns an Authenticator that hands the request's bearer token to t. A request without
// one gets no opinion. An authenticated user gets system:authenticated added, and the request loses
// its Authorization header, as Kubernetes does, so the token is not passed on.
func Bearer(t Token) Authenticator {
	return bearer{t}
}

type bearer struct{ token Token }

func (b bearer) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	token, ok := BearerToken(r)
	if !ok {
		return nil, false, nil
	}
	user, ok, err := b.token.AuthenticateToken(r.Context(), token)
	if err != nil || !ok {
		return nil, false, err
	}
	r.Header.Del("Authorization")
	return withAuthenticatedGroup(user), true, nil
}
