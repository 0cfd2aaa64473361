package authn

import (
	"context"
	"net/http"
	"slices"
	"strings"
)

// Well-known user and group names, as in Kubernetes.
const (
	// AnonymousUser is the name given to requests that present no credential.
	AnonymousUser = "system:anonymous"
	// AllUnauthenticated is the group of anonymous requests.
	AllUnauthenticated = "system:unauthenticated"
	// AllAuthenticated is the group every authenticated (non-anonymous) user belongs to.
	AllAuthenticated = "system:authenticated"
)

// UserInfo describes an authenticated user. Its JSON form is the user of a Kubernetes TokenReview
// status (authentication.k8s.io/v1 UserInfo).
type UserInfo struct {
	Name   string              `json:"username,omitempty"`
	UID    string              `json:"uid,omitempty"`
	Groups []string            `json:"groups,omitempty"`
	Extra  map[string][]string `json:"extra,omitempty"`
}

// Authenticator authenticates one HTTP request.
//
// ok=false with err=nil means "no opinion": the request carries no credential of this
// authenticator's kind. err != nil means a credential of its kind was presented and is invalid;
// the caller answers 401 Unauthorized.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (user *UserInfo, ok bool, err error)
}

// AuthenticatorFunc adapts a function to the Authenticator interface.
type AuthenticatorFunc func(r *http.Request) (*UserInfo, bool, error)

// AuthenticateRequest calls f(r).
func (f AuthenticatorFunc) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	return f(r)
}

// DeepCopy returns a copy of u that shares no slices or maps with it. A nil u copies to nil.
func (u *UserInfo) DeepCopy() *UserInfo {
	if u == nil {
		return nil
	}
	out := &UserInfo{Name: u.Name, UID: u.UID, Groups: slices.Clone(u.Groups)}
	if u.Extra != nil {
		out.Extra = make(map[string][]string, len(u.Extra))
		for k, v := range u.Extra {
			out.Extra[k] = slices.Clone(v)
		}
	}
	return out
}

// withAuthenticatedGroup adds system:authenticated to u's groups, as Kubernetes does for every
// authenticated user that is not anonymous and does not already carry the group.
func withAuthenticatedGroup(u *UserInfo) *UserInfo {
	if u.Name == AnonymousUser || slices.Contains(u.Groups, AllUnauthenticated) ||
		slices.Contains(u.Groups, AllAuthenticated) {
		return u
	}
	u.Groups = append(u.Groups, AllAuthenticated)
	return u
}

// BearerToken returns the token of an "Authorization: Bearer <token>" header, the way Kubernetes
// reads it: the header is trimmed, the scheme is case-insensitive and the token is the text up to
// the next space. ok is false when the request carries no bearer token (no header, another scheme,
// or an empty token).
func BearerToken(r *http.Request) (token string, ok bool) {
	auth := strings.TrimSpace(r.Header.Get("Authorization"))
	if auth == "" {
		return "", false
	}
	parts := strings.SplitN(auth, " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") {
		return "", false
	}
	if parts[1] == "" {
		// "Bearer  token" (two spaces): Kubernetes treats the token as empty, hence absent.
		return "", false
	}
	return parts[1], true
}

type userKey struct{}

// WithUser returns a copy of ctx carrying user.
func WithUser(ctx context.Context, user *UserInfo) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// UserFrom returns the user WithUser stored in ctx; ok is false when there is none.
func UserFrom(ctx context.Context) (user *UserInfo, ok bool) {
	user, ok = ctx.Value(userKey{}).(*UserInfo)
	return user, ok && user != nil
}
