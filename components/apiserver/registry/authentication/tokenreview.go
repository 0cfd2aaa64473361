package authentication

import (
	"net/http"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/authn"
)

// TokenReviewREST is tokenreviews: it authenticates spec.token as a bearer token of a request to
// this server would be, as Kubernetes' TokenReview does, so that an agent can check the callers of
// its own server against the API server.
type TokenReviewREST struct {
	Authenticator authn.Authenticator
}

// Create is the route answering a TokenReview.
func (rv TokenReviewREST) Create() restful.RouteFunction {
	return endpoints.CreateHandler(authn.TokenReviewGroupVersion.WithKind("TokenReview"), rv.review)
}

func (rv TokenReviewREST) review(req *restful.Request, _ http.ResponseWriter, review *authenticationv1.TokenReview) (*authenticationv1.TokenReview, error) {
	token := review.Spec.Token
	if token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	review.Status = authenticationv1.TokenReviewStatus{}
	// A header carries the token up to its first space: a token with one is no token of ours.
	if strings.ContainsAny(token, " \t\r\n") {
		review.Status.Error = authn.ErrInvalidToken.Error()
		return review, nil
	}
	ctx := req.Request.Context()
	if len(review.Spec.Audiences) > 0 {
		// Audience-aware authenticators (service account tokens) check the token against these.
		ctx = authn.WithAudiences(ctx, review.Spec.Audiences)
	}
	ctx, granted := authn.WithGrantedAudiences(ctx)
	probe, err := http.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	probe.Header.Set("Authorization", "Bearer "+token)
	user, ok, err := rv.Authenticator.AuthenticateRequest(probe)
	review.Status.Authenticated = ok
	if err != nil {
		review.Status.Error = err.Error()
	}
	if ok {
		review.Status.User = authenticationv1.UserInfo{Username: user.Name, UID: user.UID, Groups: user.Groups}
		for k, v := range user.Extra {
			if review.Status.User.Extra == nil {
				review.Status.User.Extra = map[string]authenticationv1.ExtraValue{}
			}
			review.Status.User.Extra[k] = v
		}
		// An audience-aware authenticator says which audiences the token holds for; the token
		// file and client certificates hold for any, as Kubernetes' audience-agnostic
		// authenticators do: the token is good for those asked about.
		review.Status.Audiences = review.Spec.Audiences
		if auds, ok := granted(); ok {
			review.Status.Audiences = auds
		}
	}
	return review, nil
}
