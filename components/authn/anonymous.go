package authn

import "net/http"

// Anonymous returns the authenticator of --anonymous-auth: it authenticates every request as user
// system:anonymous in group system:unauthenticated. Put it last in a Union: the Union consults it
// only when no earlier authenticator rejected a credential the request presented.
func Anonymous() Authenticator {
	return anonymous{}
}

type anonymous struct{}

func (anonymous) AuthenticateRequest(*http.Request) (*UserInfo, bool, error) {
	return &UserInfo{Name: AnonymousUser, Groups: []string{AllUnauthenticated}}, true, nil
}

// fallback marks authenticators that accept requests carrying no credential at all.
func (anonymous) fallback() {}

// fallback is implemented by authenticators that accept any request (Anonymous). Union skips them
// once an earlier authenticator has rejected a credential of the request.
type fallback interface {
	fallback()
}

// AnonymousForPaths is the anonymous section of an AuthenticationConfiguration with conditions:
// anonymous access only for requests to one of paths. Other requests without credentials get no
// opinion, so they end unauthenticated (401).
func AnonymousForPaths(paths []string) Authenticator {
	allowed := make(map[string]bool, len(paths))
	for _, p := range paths {
		allowed[p] = true
	}
	return anonymousForPaths(allowed)
}

type anonymousForPaths map[string]bool

func (a anonymousForPaths) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	if !a[r.URL.Path] {
		return nil, false, nil
	}
	return anonymous{}.AuthenticateRequest(r)
}

func (anonymousForPaths) fallback() {}
