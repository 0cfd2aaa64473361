package filters

import (
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/authn"
)

// WithAuthentication asks a who sent each request: the request goes on with its user in the
// context and without its credentials, or is answered 401.
func WithAuthentication(next http.Handler, a authn.Authenticator) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok, err := a.AuthenticateRequest(r)
		if err != nil {
			// The reason is for the operator; the client learns only that it is not authenticated.
			klog.ErrorS(err, "Unable to authenticate the request")
		}
		if err != nil || !ok {
			endpoints.WriteError(w, r, apierrors.NewUnauthorized("Unauthorized"))
			return
		}
		r.Header.Del("Authorization") // credentials stop at the edge
		next.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), user)))
	})
}
