package filters

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// htmlSanitizer keeps error texts from looking like HTML, as Kubernetes' does.
var htmlSanitizer = strings.NewReplacer(`&`, "&amp;", `<`, "&lt;", `>`, "&gt;")

// WithAuthorization asks a whether the request's user may do what it asks: a request not allowed is
// answered 403 with Kubernetes' message, or 500 when no authorizer could decide.
func WithAuthorization(next http.Handler, a authz.Authorizer) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attrs := requestAttributes(r)
		attrs.User, _ = authn.UserFrom(r.Context())
		decision, reason, err := a.Authorize(r.Context(), attrs)
		if decision == authz.DecisionAllow {
			next.ServeHTTP(w, r)
			return
		}
		if err != nil {
			// As Kubernetes: an authorizer that could not decide (a webhook down or timing out, a match
			// condition that could not be evaluated) and nothing after it allowing is a server error,
			// not a verdict on the user, answered in Kubernetes' plain text.
			klog.ErrorS(err, "Authorization failed", "path", r.URL.Path)
			w.Header().Set("Content-Type", "text/plain")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "Internal Server Error: %q: %v", htmlSanitizer.Replace(r.RequestURI), err)
			return
		}
		status := apierrors.NewForbidden(schema.GroupResource{Group: attrs.APIGroup, Resource: attrs.Resource}, attrs.Name, errors.New(reason))
		status.ErrStatus.Message = authz.ForbiddenMessage(attrs, reason)
		if attrs.ResourceRequest {
			status.ErrStatus.Details = &metav1.StatusDetails{Name: attrs.Name, Group: attrs.APIGroup, Kind: attrs.Resource}
		} else {
			status.ErrStatus.Details = nil
		}
		endpoints.WriteError(w, r, status)
	})
}
