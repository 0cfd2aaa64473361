package server

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	sacontroller "orch.io/orch/components/apiserver/controllers/serviceaccount"
	"orch.io/orch/components/apiserver/registry/core"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authn/serviceaccount"
)

const (
	testIssuer = "https://orch.example"
	saPath     = "/api/v1/namespaces/default/serviceaccounts"
)

// withTokens makes the server issue tokens as testIssuer signed by key, max the longest, and
// authenticate them beside what it already does.
func withTokens(t *testing.T, key crypto.Signer, max time.Duration) func(*Config) {
	t.Helper()
	issuer, err := serviceaccount.NewIssuer(testIssuer, key)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *Config) {
		sa := &ServiceAccounts{Issuer: issuer, Audiences: []string{testIssuer}, MaxExpiration: max}
		c.ServiceAccounts = sa
		tokens := authn.Bearer(serviceaccount.NewAuthenticator([]string{testIssuer}, []crypto.PublicKey{key.Public()}, sa.Audiences, sa, c.Clock))
		c.Authenticator = authn.Union(c.Authenticator, tokens)
	}
}

func rsaKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func tokenRequest(mutate ...func(*authenticationv1.TokenRequest)) *authenticationv1.TokenRequest {
	tr := &authenticationv1.TokenRequest{TypeMeta: metav1.TypeMeta{APIVersion: "authentication.orch.io/v1", Kind: "TokenRequest"}}
	for _, m := range mutate {
		m(tr)
	}
	return tr
}

func expiring(s int64) func(*authenticationv1.TokenRequest) {
	return func(tr *authenticationv1.TokenRequest) { tr.Spec.ExpirationSeconds = &s }
}

func boundTo(name string, uid types.UID) func(*authenticationv1.TokenRequest) {
	return func(tr *authenticationv1.TokenRequest) {
		tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: name, UID: uid}
	}
}

// payload is the claims of a compact JWT, unverified.
func payload(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("token %q is not a compact JWT", token)
	}
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(data, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

// mustCreate posts body, expecting 201; its answer reads as a 200 for decode.
func (e *env) mustCreate(path string, body any, header ...string) response {
	e.t.Helper()
	r := e.do("POST", path, body, header...)
	if r.code != http.StatusCreated {
		e.t.Fatalf("POST %s: %d %s", path, r.code, r.body)
	}
	r.code = http.StatusOK
	return r
}

func TestServiceAccountValidation(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name, saName string
		message      string
	}{
		{"a DNS subdomain", "builder.ci", ""},
		{"upper case", "Builder", `metadata.name: Invalid value: "Builder": a lowercase RFC 1123 subdomain`},
		{"no name", "", "metadata.name: Required value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", saPath, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: tc.saName}})
			if tc.message == "" {
				if r.code != http.StatusCreated {
					t.Fatalf("%d %s", r.code, r.body)
				}
				return
			}
			if s := r.expectStatus(t, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid); !strings.Contains(s.Message, tc.message) {
				t.Errorf("message %q, want %q", s.Message, tc.message)
			}
		})
	}
	// Only the names of listed secrets are kept, as Kubernetes' cleanSecretReferences.
	sa := &corev1.ServiceAccount{}
	decode(t, e.mustCreate(saPath, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "ci"},
		Secrets: []corev1.ObjectReference{{Name: "s", Namespace: "other", Kind: "Secret", UID: "u"}}}), sa)
	if len(sa.Secrets) != 1 || sa.Secrets[0] != (corev1.ObjectReference{Name: "s"}) {
		t.Errorf("secrets %+v, want the name alone", sa.Secrets)
	}
	// Without a signing key there is no token subresource.
	e.do("POST", saPath+"/builder.ci/token", tokenRequest()).expectStatus(t, http.StatusNotFound, metav1.StatusReasonNotFound)
}

// A token's claims are Kubernetes': iss, sub, aud (the API's by default), iat = nbf = now, exp
// after expirationSeconds (default an hour, at most the server's maximum), a jti, and orch.io's
// namespace, serviceaccount, pod and node.
func TestTokenRequestClaims(t *testing.T) {
	e := newEnv(t, withTokens(t, rsaKey(t), 2*time.Hour))
	sa := &corev1.ServiceAccount{}
	decode(t, e.mustCreate(saPath, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}), sa)
	e.mustCreate(saPath, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "someone"}})
	node := &corev1.Node{}
	decode(t, e.mustCreate("/api/v1/nodes", &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}), node)
	pod := e.mustCreate("/api/v1/namespaces/default/pods", podBody("web", func(p *corev1.Pod) {
		p.Spec.ServiceAccountName = "builder"
		p.Spec.NodeName = "node-a"
	})).pod(t)
	other := e.mustCreate("/api/v1/namespaces/default/pods", podBody("other", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "someone" })).pod(t)
	var core metav1.APIResourceList
	decode(t, e.do("GET", "/api/v1", nil), &core)
	var token *metav1.APIResource
	for i, r := range core.APIResources {
		if r.Name == "serviceaccounts/token" {
			token = &core.APIResources[i]
		}
	}
	if token == nil || token.Group != "authentication.orch.io" || token.Version != "v1" || token.Kind != "TokenRequest" || !token.Namespaced || strings.Join(token.Verbs, ",") != "create" {
		t.Errorf("discovery of the token subresource: %+v", token)
	}
	now := e.clock.Now().Unix()
	for _, tc := range []struct {
		name     string
		req      *authenticationv1.TokenRequest
		life     int64
		audience any
		pod      bool
		warning  string
	}{
		{"defaults", tokenRequest(), 3600, testIssuer, false, ""},
		{"ten minutes, two audiences", tokenRequest(expiring(600), func(tr *authenticationv1.TokenRequest) { tr.Spec.Audiences = []string{"a", "b"} }), 600, []string{"a", "b"}, false, ""},
		{"longer than the maximum", tokenRequest(expiring(3 * 3600)), 2 * 3600, testIssuer, false, "requested expiration of 10800 seconds shortened to 7200 seconds"},
		{"bound to a pod", tokenRequest(boundTo("web", pod.UID)), 3600, testIssuer, true, ""},
		{"bound to a pod, no uid", tokenRequest(boundTo("web", "")), 3600, testIssuer, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.mustCreate(saPath+"/builder/token", tc.req)
			if got := r.header.Get("Warning"); !strings.Contains(got, tc.warning) || (tc.warning == "") != (got == "") {
				t.Errorf("Warning %q, want %q", got, tc.warning)
			}
			out := &authenticationv1.TokenRequest{}
			decode(t, r, out)
			if out.APIVersion != "authentication.orch.io/v1" || out.Kind != "TokenRequest" || out.Name != "builder" || out.Namespace != "default" {
				t.Errorf("answer %+v", out.TypeMeta)
			}
			if got := out.Status.ExpirationTimestamp.Unix(); got != now+tc.life {
				t.Errorf("expirationTimestamp %d, want %d", got, now+tc.life)
			}
			c := payload(t, out.Status.Token)
			want := map[string]any{"iss": testIssuer, "sub": "system:serviceaccount:default:builder", "iat": float64(now), "nbf": float64(now), "exp": float64(now + tc.life)}
			for k, v := range want {
				if c[k] != v {
					t.Errorf("claim %s = %v, want %v", k, c[k], v)
				}
			}
			if got, _ := json.Marshal(c["aud"]); string(got) != mustJSON(t, tc.audience) {
				t.Errorf("aud %s, want %v", got, tc.audience)
			}
			if id, _ := c["jti"].(string); len(id) != 36 {
				t.Errorf("jti %v, want a uuid", c["jti"])
			}
			private := map[string]any{"namespace": "default", "serviceaccount": map[string]any{"name": "builder", "uid": string(sa.UID)}}
			if tc.pod {
				private["pod"] = map[string]any{"name": "web", "uid": string(pod.UID)}
				private["node"] = map[string]any{"name": "node-a", "uid": string(node.UID)}
			}
			if got, want := mustJSON(t, c["orch.io"]), mustJSON(t, private); got != want {
				t.Errorf("orch.io claims %s, want %s", got, want)
			}
			if tc.pod {
				// The node is recorded in the user's extra, not checked.
				u := e.review(out.Status.Token).User
				if got := u.Extra[serviceaccount.NodeNameKey]; len(got) != 1 || got[0] != "node-a" {
					t.Errorf("extra %v", u.Extra)
				}
				if got := u.Extra[serviceaccount.NodeUIDKey]; len(got) != 1 || got[0] != string(node.UID) {
					t.Errorf("extra %v", u.Extra)
				}
			}
		})
	}
	for _, tc := range []struct {
		name, path string
		req        *authenticationv1.TokenRequest
		code       int
		reason     metav1.StatusReason
		message    string
	}{
		{"under ten minutes", saPath + "/builder/token", tokenRequest(expiring(599)), 422, metav1.StatusReasonInvalid, "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"},
		{"over 2^32 seconds", saPath + "/builder/token", tokenRequest(expiring(1<<32 + 1)), 422, metav1.StatusReasonInvalid, "may not specify a duration larger than 2^32 seconds"},
		{"another name in the body", saPath + "/builder/token", tokenRequest(func(tr *authenticationv1.TokenRequest) { tr.Name = "x" }), 422, metav1.StatusReasonInvalid, "metadata.name: Invalid value: \"x\": must match the service account name if specified"},
		{"no such service account", saPath + "/nobody/token", tokenRequest(), 404, metav1.StatusReasonNotFound, `serviceaccounts "nobody" not found`},
		{"a pod of another service account", saPath + "/builder/token", tokenRequest(boundTo("other", other.UID)), 400, metav1.StatusReasonBadRequest, `cannot bind token for serviceaccount "builder" to pod running with different serviceaccount name.`},
		{"a pod's old uid", saPath + "/builder/token", tokenRequest(boundTo("web", "old")), 409, metav1.StatusReasonConflict, "the UID in the bound object reference (old) does not match the UID in record"},
		{"a service account's old uid", saPath + "/builder/token", tokenRequest(func(tr *authenticationv1.TokenRequest) { tr.UID = "old" }), 409, metav1.StatusReasonConflict,
			"the UID in the token request (old) does not match the UID of the service account ("},
		{"no such pod", saPath + "/builder/token", tokenRequest(boundTo("gone", "")), 404, metav1.StatusReasonNotFound, `pods "gone" not found`},
		{"bound to a secret", saPath + "/builder/token", tokenRequest(func(tr *authenticationv1.TokenRequest) {
			tr.Spec.BoundObjectRef = &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Secret", Name: "s"}
		}), 400, metav1.StatusReasonBadRequest, "cannot bind token to object of type /v1, Kind=Secret"},
		{"Kubernetes' group", saPath + "/builder/token", tokenRequest(func(tr *authenticationv1.TokenRequest) { tr.APIVersion = "authentication.k8s.io/v1" }), 400, metav1.StatusReasonBadRequest,
			"the API version in the data (authentication.k8s.io/v1) does not match the expected API version (authentication.orch.io/v1)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if s := e.do("POST", tc.path, tc.req).expectStatus(t, tc.code, tc.reason); !strings.Contains(s.Message, tc.message) {
				t.Errorf("message %q, want %q", s.Message, tc.message)
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// review asks the server's TokenReview about token.
func (e *env) review(token string, audiences ...string) authenticationv1.TokenReviewStatus {
	e.t.Helper()
	out := &authenticationv1.TokenReview{}
	decode(e.t, e.mustCreate(tokenReviewsPath, map[string]any{"apiVersion": "authentication.orch.io/v1", "kind": "TokenReview",
		"spec": map[string]any{"token": token, "audiences": audiences}}), out)
	return out.Status
}

func (e *env) token(sa string, mutate ...func(*authenticationv1.TokenRequest)) string {
	e.t.Helper()
	out := &authenticationv1.TokenRequest{}
	decode(e.t, e.mustCreate(saPath+"/"+sa+"/token", tokenRequest(mutate...)), out)
	return out.Status.Token
}

// The server authenticates its tokens as Kubernetes does: the service account's user, groups and
// extra while the token lives and what it is bound to exists, for the audiences it names.
func TestServiceAccountTokenAuthentication(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withTokens(t, key, 0))
	sa := &corev1.ServiceAccount{}
	decode(t, e.mustCreate(saPath, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}), sa)
	pod := e.mustCreate("/api/v1/namespaces/default/pods", podBody("web", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "builder" })).pod(t)

	bound := e.token("builder", boundTo("web", pod.UID))
	status := e.review(bound)
	if !status.Authenticated || status.Error != "" || strings.Join(status.Audiences, ",") != testIssuer {
		t.Fatalf("bound token: %+v, want the API's audience", status)
	}
	u := status.User
	if u.Username != "system:serviceaccount:default:builder" || u.UID != string(sa.UID) ||
		mustJSON(t, u.Groups) != `["system:serviceaccounts","system:serviceaccounts:default","system:authenticated"]` {
		t.Errorf("user %+v", u)
	}
	if got := u.Extra[serviceaccount.PodNameKey]; len(got) != 1 || got[0] != "web" {
		t.Errorf("extra %v", u.Extra)
	}
	if got := u.Extra[serviceaccount.PodUIDKey]; len(got) != 1 || got[0] != string(pod.UID) {
		t.Errorf("extra %v", u.Extra)
	}
	if got := u.Extra[serviceaccount.CredentialIDKey]; len(got) != 1 || got[0] != "JTI="+payload(t, bound)["jti"].(string) {
		t.Errorf("extra %v", u.Extra)
	}
	// The token is a credential of requests too.
	if r := e.do("GET", saPath+"/builder", nil, as(bound)...); r.code != http.StatusOK {
		t.Errorf("a request with the token: %d %s", r.code, r.body)
	}

	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := serviceaccount.NewIssuer(testIssuer, other)
	if err != nil {
		t.Fatal(err)
	}
	forgedToken, err := forged.Token(serviceaccount.Binding{ServiceAccount: sa}, e.clock.Now(), time.Hour, []string{testIssuer})
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := serviceaccount.NewIssuer("https://elsewhere", key)
	if err != nil {
		t.Fatal(err)
	}
	strangerToken, err := stranger.Token(serviceaccount.Binding{ServiceAccount: sa}, e.clock.Now(), time.Hour, []string{testIssuer})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, token string
		audiences   []string
		err         string
	}{
		{"another audience", e.token("builder", func(tr *authenticationv1.TokenRequest) { tr.Spec.Audiences = []string{"vault"} }), nil,
			`token audiences ["vault"] is invalid for the target audiences ["https://orch.example"]`},
		{"the audience asked", e.token("builder", func(tr *authenticationv1.TokenRequest) { tr.Spec.Audiences = []string{"vault"} }), []string{"vault", "bank"}, ""},
		{"not the audience asked", bound, []string{"vault"}, `token audiences ["https://orch.example"] is invalid for the target audiences ["vault"]`},
		{"signed by another key", forgedToken, nil, "crypto"},
		{"of another issuer", strangerToken, nil, "invalid bearer token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := e.review(tc.token, tc.audiences...)
			if tc.err == "" {
				// Only the audiences both the token and the review name.
				if !s.Authenticated || strings.Join(s.Audiences, ",") != "vault" {
					t.Fatalf("%+v, want audiences [vault]", s)
				}
				return
			}
			if s.Authenticated || !strings.Contains(s.Error, tc.err) {
				t.Errorf("status %+v, want error %q", s, tc.err)
			}
		})
	}

	// Lifetime, then the objects it is bound to.
	// Past exp and go-jose's minute of leeway, as in Kubernetes.
	unbound := e.token("builder", expiring(600))
	e.clock.Add(600*time.Second + time.Minute)
	if s := e.review(unbound); !s.Authenticated {
		t.Errorf("a token within the leeway: %+v", s)
	}
	e.clock.Add(time.Second)
	if s := e.review(unbound); s.Authenticated || !strings.Contains(s.Error, "service account token has expired") {
		t.Errorf("expired token: %+v", s)
	}
	if s := e.review(bound); !s.Authenticated {
		t.Errorf("an hour's token after ten minutes: %+v", s)
	}
	if r := e.do("DELETE", "/api/v1/namespaces/default/pods/web?gracePeriodSeconds=0", nil); r.code != http.StatusOK {
		t.Fatalf("deleting the pod: %d %s", r.code, r.body)
	}
	if s := e.review(bound); s.Authenticated || !strings.Contains(s.Error, "service account token has been invalidated") {
		t.Errorf("token of a deleted pod: %+v", s)
	}
	fresh := e.token("builder")
	if r := e.do("DELETE", saPath+"/builder", nil); r.code != http.StatusOK {
		t.Fatalf("deleting the service account: %d %s", r.code, r.body)
	}
	if s := e.review(fresh); s.Authenticated || !strings.Contains(s.Error, `serviceaccounts "builder" not found`) {
		t.Errorf("token of a deleted service account: %+v", s)
	}
	e.mustCreate(saPath, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}})
	if s := e.review(fresh); s.Authenticated || !strings.Contains(s.Error, "service account UID (") || !strings.Contains(s.Error, "does not match claim ("+string(sa.UID)+")") {
		t.Errorf("token of a recreated service account: %+v", s)
	}
}

// A node creates tokens only for the service accounts of its pods, bound to such a pod, for the
// audiences the pod's token volumes name (Kubernetes' node authorizer and NodeRestriction).
func TestNodeCreatesTokensOfItsPods(t *testing.T) {
	e := nodeEnv(t, "Node", withTokens(t, rsaKey(t), 0))
	registerNode(t, e, "node-a")
	registerNode(t, e, "node-b")
	for _, name := range []string{"builder", "other"} {
		e.mustCreate(saPath, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, as("admin")...)
	}
	pod := func(name, node, sa string) *corev1.Pod {
		return e.mustCreate("/api/v1/namespaces/default/pods", podBody(name, func(p *corev1.Pod) {
			p.Spec.NodeName, p.Spec.ServiceAccountName = node, sa
			p.Spec.Volumes = []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "vault", Audience: "vault"}},
			}}}}}
		}), as("admin")...).pod(t)
	}
	mine, theirs := pod("mine", "node-a", "builder"), pod("theirs", "node-b", "builder")
	pod("elsewhere", "node-b", "other")
	auds := func(a ...string) func(*authenticationv1.TokenRequest) {
		return func(tr *authenticationv1.TokenRequest) { tr.Spec.Audiences = a }
	}
	for _, tc := range []struct {
		name, sa string
		req      *authenticationv1.TokenRequest
		message  string // empty: issued
	}{
		{"its pod's, API audience", "builder", tokenRequest(boundTo("mine", mine.UID)), ""},
		{"its pod's, a volume's audience", "builder", tokenRequest(boundTo("mine", mine.UID), auds("vault")), ""},
		{"an audience no volume names", "builder", tokenRequest(boundTo("mine", mine.UID), auds("bank")),
			`serviceaccounts "builder" is forbidden: audience "bank" not found in pod spec volume, system:node:node-a is not authorized to request tokens for this audience`},
		{"the API's audience, named", "builder", tokenRequest(boundTo("mine", mine.UID), auds(testIssuer)),
			`audience "https://orch.example" not found in pod spec volume`},
		{"two audiences", "builder", tokenRequest(boundTo("mine", mine.UID), auds("vault", "bank")), "node may only request 0 or 1 audiences"},
		{"not bound", "builder", tokenRequest(), `serviceaccounts "builder" is forbidden: node requested token not bound to a pod`},
		{"bound without a uid", "builder", tokenRequest(boundTo("mine", "")), "node requested token with a pod binding without a uid"},
		{"bound to another node's pod", "builder", tokenRequest(boundTo("theirs", theirs.UID)), "node requested token bound to a pod scheduled on a different node"},
		{"a service account none of its pods runs as", "other", tokenRequest(), `User "system:node:node-a" cannot create resource "serviceaccounts/token" in API group "" in the namespace "default": no relationship found between node 'node-a' and this object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do("POST", saPath+"/"+tc.sa+"/token", tc.req, as("node-a")...)
			if tc.message == "" {
				if r.code != http.StatusCreated {
					t.Fatalf("%d %s", r.code, r.body)
				}
				return
			}
			if s := r.expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden); !strings.Contains(s.Message, tc.message) {
				t.Errorf("message\n  %s\nwant\n  %s", s.Message, tc.message)
			}
		})
	}
	// The node reads the service accounts its pods run as (for credential provider plugins in
	// service account token mode, as Kubernetes' node authorizer allows), no other.
	if r := e.do("GET", saPath+"/builder", nil, as("node-a")...); r.code != http.StatusOK {
		t.Errorf("a node reading its pod's service account: %d %s", r.code, r.body)
	}
	e.do("GET", saPath+"/other", nil, as("node-a")...).expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden)
}

// With RBAC a node is granted audiences its pods do not project: a rule of verb
// request-serviceaccounts-token-audience on the audience as resource ("*" for any), the service
// account as resource name (none for all), bound to the node; in the binding's namespace for a
// RoleBinding (Kubernetes' NodeRestriction with ServiceAccountNodeAudienceRestriction). This is how
// a credential provider plugin's token mode gets a token for its registry's audience.
func TestNodeTokenAudienceGrantedByRBAC(t *testing.T) {
	e := nodeEnv(t, "Node,RBAC", withTokens(t, rsaKey(t), 0))
	registerNode(t, e, "node-a")
	e.mustCreate("/api/v1/namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, as("admin")...)
	pods := map[string]*corev1.Pod{}
	for _, ns := range []string{"default", "team"} {
		for _, sa := range []string{"builder", "runner"} {
			e.mustCreate("/api/v1/namespaces/"+ns+"/serviceaccounts", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, as("admin")...)
			pods[ns+"/"+sa] = e.mustCreate("/api/v1/namespaces/"+ns+"/pods", podBody(sa, func(p *corev1.Pod) {
				p.Spec.NodeName, p.Spec.ServiceAccountName = "node-a", sa
			}), as("admin")...).pod(t)
		}
	}
	request := func(ns, sa, audience string) response {
		return e.do("POST", "/api/v1/namespaces/"+ns+"/serviceaccounts/"+sa+"/token",
			tokenRequest(boundTo(sa, pods[ns+"/"+sa].UID), func(tr *authenticationv1.TokenRequest) { tr.Spec.Audiences = []string{audience} }), as("node-a")...)
	}
	const refused = `audience "registry.example" not found in pod spec volume, system:node:node-a is not authorized to request tokens for this audience`
	grant := func(name string, rule rbacv1.PolicyRule, binding *rbacv1.RoleBinding) {
		t.Helper()
		e.mustCreate(rbacPath+"/clusterroles", &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.orch.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{rule}}, as("admin")...)
		if binding.Namespace == "" {
			e.mustCreate(rbacPath+"/clusterrolebindings", &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.orch.io/v1", Kind: "ClusterRoleBinding"},
				ObjectMeta: binding.ObjectMeta, RoleRef: binding.RoleRef, Subjects: binding.Subjects}, as("admin")...)
			return
		}
		e.mustCreate(rbacPath+"/namespaces/"+binding.Namespace+"/rolebindings", binding, as("admin")...)
	}
	audienceRule := func(resource string, names ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{resource}, ResourceNames: names, Verbs: []string{"request-serviceaccounts-token-audience"}}
	}
	issuedSoon := func(ns, sa, audience string) {
		t.Helper()
		eventually(t, func() bool { return request(ns, sa, audience).code == http.StatusCreated })
	}

	// No grant: refused with the kubelet's text.
	if s := request("default", "builder", "registry.example").expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden); !strings.Contains(s.Message, refused) {
		t.Fatalf("without a grant: %s, want %s", s.Message, refused)
	}

	// The audience for one service account, in one namespace (a RoleBinding of a ClusterRole).
	bound := bindingBody("node-a-registry", "ClusterRole", "registry-builder", "system:node:node-a")
	bound.Namespace = "default"
	grant("registry-builder", audienceRule("registry.example", "builder"), bound)
	issuedSoon("default", "builder", "registry.example")
	for _, tc := range []struct{ ns, sa, audience string }{
		{"default", "runner", "registry.example"}, // another service account
		{"team", "builder", "registry.example"},   // another namespace
		{"default", "builder", "other.example"},   // another audience
	} {
		if s := request(tc.ns, tc.sa, tc.audience).expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden); !strings.Contains(s.Message, "not authorized to request tokens for this audience") {
			t.Errorf("%+v: %s", tc, s.Message)
		}
	}

	// Every audience for every service account, everywhere: the wildcard, no names, a
	// ClusterRoleBinding to the nodes' group.
	all := bindingBody("nodes-any-audience", "ClusterRole", "any-audience")
	all.Subjects = []rbacv1.Subject{{Kind: "Group", Name: "system:nodes", APIGroup: "rbac.authorization.orch.io"}}
	grant("any-audience", audienceRule("*"), all)
	issuedSoon("team", "runner", "other.example")
	issuedSoon("default", "runner", "registry.example")

	// The grant reaches no further than NodeRestriction's other checks: one audience a request.
	if s := e.do("POST", saPath+"/builder/token", tokenRequest(boundTo("builder", pods["default/builder"].UID),
		func(tr *authenticationv1.TokenRequest) { tr.Spec.Audiences = []string{"a", "b"} }), as("node-a")...).
		expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden); !strings.Contains(s.Message, "node may only request 0 or 1 audiences") {
		t.Errorf("two audiences: %s", s.Message)
	}
}

// Each namespace gets its default service account, as Kubernetes' serviceaccounts controller
// does, and a pod runs as a service account that exists, the default one unless it names another
// (Kubernetes' ServiceAccount admission).
func TestDefaultServiceAccounts(t *testing.T) {
	e := newEnv(t, withTokens(t, rsaKey(t), 0))
	e.mustCreate("/api/v1/namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}})
	eventually(t, func() bool {
		e.clock.Add(sacontroller.SyncInterval)
		return e.do("GET", "/api/v1/namespaces/team/serviceaccounts/default", nil).code == http.StatusOK &&
			e.do("GET", saPath+"/default", nil).code == http.StatusOK
	})
	const pods = "/api/v1/namespaces/team/pods"
	if p := e.mustCreate(pods, podBody("plain")).pod(t); p.Spec.ServiceAccountName != "default" || p.Spec.DeprecatedServiceAccount != "default" {
		t.Errorf("a pod naming no service account runs as %q (%q)", p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount)
	}
	e.mustCreate("/api/v1/namespaces/team/serviceaccounts", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "old"}})
	if p := e.mustCreate(pods, podBody("deprecated", func(p *corev1.Pod) { p.Spec.DeprecatedServiceAccount = "old" })).pod(t); p.Spec.ServiceAccountName != "old" {
		t.Errorf("spec.serviceAccount old: runs as %q", p.Spec.ServiceAccountName)
	}
	s := e.do("POST", pods, podBody("lost", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "nobody" })).expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden)
	if want := `pods "lost" is forbidden: error looking up service account team/nobody: serviceaccounts "nobody" not found`; s.Message != want {
		t.Errorf("message\n  %s\nwant\n  %s", s.Message, want)
	}
	s = e.do("POST", pods, podBody("mirror", func(p *corev1.Pod) {
		p.Annotations = map[string]string{core.MirrorPodAnnotation: "x"}
		p.Spec.ServiceAccountName = "old"
	})).expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden)
	if want := `pods "mirror" is forbidden: a mirror pod may not reference service accounts`; s.Message != want {
		t.Errorf("message\n  %s\nwant\n  %s", s.Message, want)
	}
	if p := e.mustCreate(pods, podBody("mirror", func(p *corev1.Pod) { p.Annotations = map[string]string{core.MirrorPodAnnotation: "x"} })).pod(t); p.Spec.ServiceAccountName != "" {
		t.Errorf("a mirror pod runs as %q", p.Spec.ServiceAccountName)
	}
}

// A pod gets its service account's token mounted, as Kubernetes' ServiceAccount admission mounts
// it: a projected orch-api-access-<random> volume of a token, the root CA and the namespace,
// read-only at /var/run/secrets/orch.io/serviceaccount in every container that has nothing there,
// unless the pod or else its service account says not to; every namespace gets the root CA in its
// orch-root-ca.crt configmap.
func TestServiceAccountTokenAutomount(t *testing.T) {
	var sa *ServiceAccounts
	e := newEnv(t, withTokens(t, rsaKey(t), 0), func(c *Config) {
		sa = c.ServiceAccounts
		sa.SetRootCA([]byte("the CA\n"))
		c.NameSuffix = func() string { return "abcde" }
	})
	no := false
	e.mustCreate(saPath, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "quiet"}, AutomountServiceAccountToken: &no})
	eventually(t, func() bool {
		e.clock.Add(sacontroller.SyncInterval)
		return e.do("GET", saPath+"/default", nil).code == http.StatusOK
	})
	cm := &corev1.ConfigMap{}
	decode(t, e.do("GET", "/api/v1/namespaces/default/configmaps/orch-root-ca.crt", nil), cm)
	if cm.Data["ca.crt"] != "the CA\n" {
		t.Errorf("root CA configmap %v", cm.Data)
	}
	const pods = "/api/v1/namespaces/default/pods"
	const mountPath = "/var/run/secrets/orch.io/serviceaccount"
	p := e.mustCreate(pods, podBody("plain", func(p *corev1.Pod) {
		p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "own", Image: "busybox",
			VolumeMounts: []corev1.VolumeMount{{Name: "mine", MountPath: mountPath}}})
		p.Spec.Volumes = []corev1.Volume{{Name: "mine", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	})).pod(t)
	want := `{"name":"orch-api-access-abcde","projected":{"sources":[` +
		`{"serviceAccountToken":{"expirationSeconds":3607,"path":"token"}},` +
		`{"configMap":{"name":"orch-root-ca.crt","items":[{"key":"ca.crt","path":"ca.crt"}]}},` +
		`{"downwardAPI":{"items":[{"path":"namespace","fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"}}]}}],"defaultMode":420}}`
	if len(p.Spec.Volumes) != 2 || mustJSON(t, p.Spec.Volumes[1]) != want {
		t.Fatalf("volumes %s\nwant the token volume %s", mustJSON(t, p.Spec.Volumes), want)
	}
	mount := `[{"name":"orch-api-access-abcde","readOnly":true,"mountPath":"` + mountPath + `"}]`
	if got := mustJSON(t, p.Spec.InitContainers[0].VolumeMounts); got != mount {
		t.Errorf("init container mounts %s", got)
	}
	if got := mustJSON(t, p.Spec.Containers[0].VolumeMounts); got != mount {
		t.Errorf("container mounts %s", got)
	}
	if got := p.Spec.Containers[1].VolumeMounts; len(got) != 1 || got[0].Name != "mine" {
		t.Errorf("a container with its own mount there got %v", got)
	}
	yes := true
	for _, tc := range []struct {
		name  string
		edit  func(*corev1.Pod)
		mount bool
	}{
		{"the pod says no", func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = &no }, false},
		{"its service account says no", func(p *corev1.Pod) { p.Spec.ServiceAccountName = "quiet" }, false},
		{"the pod overrides its service account", func(p *corev1.Pod) {
			p.Spec.ServiceAccountName, p.Spec.AutomountServiceAccountToken = "quiet", &yes
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := e.mustCreate(pods, podBody(strings.ReplaceAll(tc.name, " ", "-"), tc.edit)).pod(t)
			if mounted := len(p.Spec.Volumes) == 1; mounted != tc.mount {
				t.Errorf("volumes %s, want mounted %v", mustJSON(t, p.Spec.Volumes), tc.mount)
			}
		})
	}
	// A new root CA reaches the configmaps.
	sa.SetRootCA([]byte("a new CA\n"))
	eventually(t, func() bool {
		e.clock.Add(sacontroller.SyncInterval)
		decode(t, e.do("GET", "/api/v1/namespaces/default/configmaps/orch-root-ca.crt", nil), cm)
		return cm.Data["ca.crt"] == "a new CA\n"
	})
}
