package authn

import (
	"errors"
	"net/http"
)

// Union returns an authenticator that asks authenticators in order; the first that authenticates
// the request wins.
//
// An error from one authenticator does not stop the others: a bearer token unknown to a token file
// may still be accepted by a later token authenticator. When none authenticates the request, the
// errors are returned joined; when none had an opinion, the union has none either.
//
// Fallback authenticators (Anonymous) are asked only for requests that present no credential: a
// bearer token that no earlier authenticator accepted is rejected (ErrInvalidToken) even when
// anonymous access is enabled and no token authenticator is configured, so an unknown token is
// always 401 rather than silently anonymous. Nil entries are ignored.
func Union(authenticators ...Authenticator) Authenticator {
	list := make([]Authenticator, 0, len(authenticators))
	for _, a := range authenticators {
		if a != nil {
			list = append(list, a)
		}
	}
	return union(list)
}

type union []Authenticator

func (u union) AuthenticateRequest(r *http.Request) (*UserInfo, bool, error) {
	var errs []error
	for _, a := range u {
		if _, ok := a.(fallback); ok {
			if _, presented := BearerToken(r); presented && len(errs) == 0 {
				errs = append(errs, ErrInvalidToken)
			}
			if len(errs) > 0 {
				continue
			}
		}
		user, ok, err := a.AuthenticateRequest(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return user, true, nil
		}
	}
	return nil, false, errors.Join(errs...)
}
