package noderestriction

import (
	"context"
	"errors"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apiserver/admission"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// A node's token for an audience its pod does not project is issued when the authorizer allows
// the node RequestAudienceVerb on the audience for the service account, in the request's
// namespace, as Kubernetes' NodeRestriction asks; the refusal names why in Kubernetes' texts.
func TestTokenAudienceAuthorized(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "p", UID: "u-1"}, Spec: corev1.PodSpec{
		NodeName: "a", ServiceAccountName: "builder",
		Volumes: []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "vault", Audience: "vault"}}}}}}},
	}}
	node := &authn.UserInfo{Name: "system:node:a", Groups: []string{authz.NodesGroup}}
	const notAuthorized = `audience "registry.example" not found in pod spec volume, system:node:a is not authorized to request tokens for this audience`
	for _, tc := range []struct {
		name     string
		audience string
		decision authz.Decision
		err      error
		asked    bool   // the authorizer is asked
		want     string // "" admitted
	}{
		{"projected by the pod", "vault", authz.DecisionDeny, nil, false, ""},
		{"allowed", "registry.example", authz.DecisionAllow, nil, true, ""},
		{"allowed despite an error", "registry.example", authz.DecisionAllow, errors.New("a binding failed"), true, ""},
		{"no opinion", "registry.example", authz.DecisionNoOpinion, nil, true, notAuthorized},
		{"denied", "registry.example", authz.DecisionDeny, nil, true, notAuthorized},
		{"an error", "registry.example", authz.DecisionNoOpinion, errors.New("webhook down"), true,
			`audience "registry.example" not found in pod spec volume, error authorizing system:node:a to request tokens for this audience: webhook down`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked *authz.Attributes
			p := New(Config{
				Pod: func(context.Context, string, string) (*corev1.Pod, error) { return pod, nil },
				Authorizer: authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
					asked = &a
					return tc.decision, "", tc.err
				}),
			})
			tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{tc.audience},
				BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "p", UID: "u-1"}}}
			err := p.Admit(context.Background(), admission.Attributes{Operation: admission.Create, Resource: serviceAccounts,
				Subresource: "token", Namespace: "team", Name: "builder", Object: tr, User: node})
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
			if (asked != nil) != tc.asked {
				t.Fatalf("authorizer asked: %v, want %v", asked != nil, tc.asked)
			}
			want := authz.Attributes{User: node, Verb: "request-serviceaccounts-token-audience", Namespace: "team",
				APIVersion: "v1", Resource: tc.audience, Name: "builder", ResourceRequest: true}
			if asked != nil && *asked != want {
				t.Errorf("asked %+v, want %+v", *asked, want)
			}
		})
	}
}
