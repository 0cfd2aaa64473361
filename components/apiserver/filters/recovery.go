package filters

import (
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch.io/orch/components/apiserver/endpoints"
)

// WithPanicRecovery turns a handler panic into a 500 Status instead of a dropped connection.
func WithPanicRecovery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				endpoints.WriteError(w, r, apierrors.NewInternalError(fmt.Errorf("panic: %v", v)))
			}
		}()
		next.ServeHTTP(w, r)
	})
}
