package authentication

import (
	"net/http"

	"github.com/benbjohnson/clock"
	restful "github.com/emicklei/go-restful/v3"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apiserver/endpoints"
	"orch.io/orch/components/authn"
)

// SelfSubjectReviewREST is selfsubjectreviews: who the server takes the requesting user for, the
// name, uid, groups and extra its authenticators gave them (kubectl auth whoami).
type SelfSubjectReviewREST struct {
	Clock clock.Clock
}

// Create is the route answering a SelfSubjectReview.
func (rv SelfSubjectReviewREST) Create() restful.RouteFunction {
	return endpoints.CreateHandler(authn.TokenReviewGroupVersion.WithKind("SelfSubjectReview"), rv.review)
}

// review answers as Kubernetes does: the body's content is not read, and the answer is a new
// review stamped with the time it was made.
func (rv SelfSubjectReviewREST) review(req *restful.Request, _ http.ResponseWriter, _ *authenticationv1.SelfSubjectReview) (*authenticationv1.SelfSubjectReview, error) {
	user, ok := authn.UserFrom(req.Request.Context())
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	out := &authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(rv.Clock.Now())},
		Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: authenticationv1.UserInfo{
			Username: user.Name, UID: user.UID, Groups: user.Groups, Extra: map[string]authenticationv1.ExtraValue{},
		}},
	}
	for k, v := range user.Extra {
		out.Status.UserInfo.Extra[k] = v
	}
	return out, nil
}
