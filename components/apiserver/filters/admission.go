package filters

import (
	"context"
	"net/http"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// WithAdmission refuses, once the request is authorized and before its body is read, a request
// admit refuses by what its method and path say (NodeRestriction: a node writing another node's
// Node or Lease, or a pod not bound to it), whatever its body. admit answers the Status error the
// client gets, or nil to let the request through.
func WithAdmission(next http.Handler, admit func(context.Context, authz.Attributes) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attrs := requestAttributes(r)
		attrs.User, _ = authn.UserFrom(r.Context())
		if err := admit(r.Context(), attrs); err != nil {
			endpoints.WriteError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}
