package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

const (
	tokenReviewsPath = "/apis/authentication.orch.io/v1/tokenreviews"
	sarPath          = "/apis/authorization.orch.io/v1/subjectaccessreviews"
)

func TestReviewDiscovery(t *testing.T) {
	e := newEnv(t)
	for _, tt := range []struct {
		gv, names, kinds string
	}{
		{"authentication.orch.io/v1", "selfsubjectreviews,tokenreviews", "SelfSubjectReview,TokenReview"},
		{"authentication.k8s.io/v1", "selfsubjectreviews,tokenreviews", "SelfSubjectReview,TokenReview"},
		{"authorization.orch.io/v1", "localsubjectaccessreviews,selfsubjectaccessreviews,selfsubjectrulesreviews,subjectaccessreviews", "LocalSubjectAccessReview,SelfSubjectAccessReview,SelfSubjectRulesReview,SubjectAccessReview"},
		{"authorization.k8s.io/v1", "localsubjectaccessreviews,selfsubjectaccessreviews,selfsubjectrulesreviews,subjectaccessreviews", "LocalSubjectAccessReview,SelfSubjectAccessReview,SelfSubjectRulesReview,SubjectAccessReview"},
	} {
		var list metav1.APIResourceList
		decode(t, e.do("GET", "/apis/"+tt.gv, nil), &list)
		var want []metav1.APIResource
		kinds := strings.Split(tt.kinds, ",")
		for i, name := range strings.Split(tt.names, ",") {
			want = append(want, metav1.APIResource{Name: name, SingularName: strings.TrimSuffix(name, "s"), Kind: kinds[i], Verbs: metav1.Verbs{"create"},
				Namespaced: name == "localsubjectaccessreviews"})
		}
		if list.Kind != "APIResourceList" || list.GroupVersion != tt.gv || !reflect.DeepEqual(list.APIResources, want) {
			t.Errorf("/apis/%s = %+v", tt.gv, list)
		}
		var group metav1.APIGroup
		decode(t, e.do("GET", "/apis/"+strings.TrimSuffix(tt.gv, "/v1"), nil), &group)
		if group.PreferredVersion.GroupVersion != tt.gv {
			t.Errorf("group document %+v", group)
		}
		// Create only.
		names := strings.Split(tt.names, ",")
		e.do("GET", "/apis/"+tt.gv+"/"+names[len(names)-1], nil).expectStatus(t, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed)
	}
}

// TokenReviews are answered by the server's own authenticator: the token file's users, with
// system:authenticated, and an error for a token no authenticator accepts.
func TestTokenReview(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Authenticator = authn.Union(tokenFile(t), authn.Anonymous()) })
	review := func(token string, audiences ...string) map[string]any {
		return map[string]any{"apiVersion": "authentication.orch.io/v1", "kind": "TokenReview", "spec": map[string]any{"token": token, "audiences": audiences}}
	}
	tests := []struct {
		name   string
		body   any
		want   authenticationv1.TokenReviewStatus
		status int
		msg    string
	}{
		{"known token", review("good-token"), authenticationv1.TokenReviewStatus{Authenticated: true,
			User: authenticationv1.UserInfo{Username: "alice", UID: "u-1", Groups: []string{"admins", "devs", "system:authenticated"}}}, 0, ""},
		{"known token, audiences asked", review("good-token", "orchlet"), authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: []string{"orchlet"},
			User: authenticationv1.UserInfo{Username: "alice", UID: "u-1", Groups: []string{"admins", "devs", "system:authenticated"}}}, 0, ""},
		{"unknown token", review("wrong"), authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}, 0, ""},
		{"a known token and more", review("good-token trailing"), authenticationv1.TokenReviewStatus{Error: "invalid bearer token"}, 0, ""},
		{"no token", review(""), authenticationv1.TokenReviewStatus{}, 400, "token is required for TokenReview in authentication"},
		{"Kubernetes' group", map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": map[string]any{"token": "good-token"}},
			authenticationv1.TokenReviewStatus{}, 400, "the API version in the data (authentication.k8s.io/v1) does not match the expected API version (authentication.orch.io/v1)"},
		{"another kind", map[string]any{"kind": "SubjectAccessReview"}, authenticationv1.TokenReviewStatus{}, 400, `kind "SubjectAccessReview" is not TokenReview`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do("POST", tokenReviewsPath, tt.body)
			if tt.status != 0 {
				if s := r.expectStatus(t, tt.status, metav1.StatusReasonBadRequest); !strings.Contains(s.Message, tt.msg) {
					t.Errorf("message %q, want %q", s.Message, tt.msg)
				}
				return
			}
			if r.code != http.StatusCreated {
				t.Fatalf("%d %s", r.code, r.body)
			}
			var got authenticationv1.TokenReview
			if err := json.Unmarshal(r.body, &got); err != nil {
				t.Fatal(err)
			}
			if got.APIVersion != "authentication.orch.io/v1" || got.Kind != "TokenReview" || !reflect.DeepEqual(got.Status, tt.want) {
				t.Errorf("answer %s/%s status %+v, want %+v", got.APIVersion, got.Kind, got.Status, tt.want)
			}
		})
	}
}

// SubjectAccessReviews are answered by the server's own authorizer chain, Node mode included.
func TestSubjectAccessReview(t *testing.T) {
	node := &NodeAuthorization{}
	users := authz.AuthorizerFunc(func(_ context.Context, a authz.Attributes) (authz.Decision, string, error) {
		switch a.User.Name {
		case "alice", authn.AnonymousUser:
			return authz.DecisionAllow, "", nil
		case "mallory":
			return authz.DecisionDeny, "mallory is banned", nil
		case "broken":
			return authz.DecisionNoOpinion, "", errors.New("policy store unreachable")
		}
		if a.User.Extra["scopes"] != nil && a.User.Extra["scopes"][0] == "admin" && a.User.UID == "u-7" {
			return authz.DecisionAllow, "scoped admin", nil
		}
		return authz.DecisionNoOpinion, "", nil
	})
	e := newEnv(t, func(c *Config) {
		c.Authorizer = authz.Union(authz.Node(node.Pod), users)
		c.Node = node
	})
	for _, p := range []*corev1.Pod{podBody("on-a", func(p *corev1.Pod) { p.Spec.NodeName = "node-a" }), podBody("on-b", func(p *corev1.Pod) { p.Spec.NodeName = "node-b" })} {
		if r := e.do("POST", "/api/v1/namespaces/default/pods", p); r.code != http.StatusCreated {
			t.Fatalf("%d %s", r.code, r.body)
		}
	}
	podStatus := func(pod string) *authorizationv1.ResourceAttributes {
		return &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "patch", Version: "v1", Resource: "pods", Subresource: "status", Name: pod}
	}
	nodeA := authorizationv1.SubjectAccessReviewSpec{User: "system:node:node-a", Groups: []string{"system:nodes"}}
	with := func(s authorizationv1.SubjectAccessReviewSpec, ra *authorizationv1.ResourceAttributes) authorizationv1.SubjectAccessReviewSpec {
		s.ResourceAttributes = ra
		return s
	}
	tests := []struct {
		name string
		spec authorizationv1.SubjectAccessReviewSpec
		want authorizationv1.SubjectAccessReviewStatus
	}{
		{"a node, its pod's status", with(nodeA, podStatus("on-a")), authorizationv1.SubjectAccessReviewStatus{Allowed: true}},
		{"a node, another node's pod", with(nodeA, podStatus("on-b")), authorizationv1.SubjectAccessReviewStatus{
			Reason: `node "node-a" can only update pod status for pods with spec.nodeName set to itself`}},
		{"a node without its group", with(authorizationv1.SubjectAccessReviewSpec{User: "system:node:node-a"}, podStatus("on-a")), authorizationv1.SubjectAccessReviewStatus{}},
		{"denied", with(authorizationv1.SubjectAccessReviewSpec{User: "mallory"}, podStatus("on-a")), authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "mallory is banned"}},
		{"an evaluation error", with(authorizationv1.SubjectAccessReviewSpec{User: "broken"}, podStatus("on-a")),
			authorizationv1.SubjectAccessReviewStatus{EvaluationError: "policy store unreachable"}},
		{"uid and extra reach the authorizer", with(authorizationv1.SubjectAccessReviewSpec{User: "carol", UID: "u-7", Extra: map[string]authorizationv1.ExtraValue{"scopes": {"admin"}}}, podStatus("on-a")),
			authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "scoped admin"}},
		{"a path", authorizationv1.SubjectAccessReviewSpec{User: "alice", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}},
			authorizationv1.SubjectAccessReviewStatus{Allowed: true}},
		{"a path, a node", authorizationv1.SubjectAccessReviewSpec{User: "system:node:node-a", Groups: []string{"system:nodes"}, NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}},
			authorizationv1.SubjectAccessReviewStatus{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do("POST", sarPath, authorizationv1.SubjectAccessReview{
				TypeMeta: metav1.TypeMeta{APIVersion: "authorization.orch.io/v1", Kind: "SubjectAccessReview"}, Spec: tt.spec})
			if r.code != http.StatusCreated {
				t.Fatalf("%d %s", r.code, r.body)
			}
			var got authorizationv1.SubjectAccessReview
			if err := json.Unmarshal(r.body, &got); err != nil {
				t.Fatal(err)
			}
			if got.APIVersion != "authorization.orch.io/v1" || got.Kind != "SubjectAccessReview" || !reflect.DeepEqual(got.Status, tt.want) ||
				!reflect.DeepEqual(got.Spec, tt.spec) {
				t.Errorf("answer %s/%s spec %+v status %+v, want status %+v", got.APIVersion, got.Kind, got.Spec, got.Status, tt.want)
			}
		})
	}
}

func TestSubjectAccessReviewValidation(t *testing.T) {
	e := newEnv(t)
	tests := []struct {
		name string
		body string
		want string
	}{
		{"nothing", `{"spec":{}}`, `SubjectAccessReview.authorization.orch.io "" is invalid: [spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified, spec.user: Invalid value: "": at least one of user or group must be specified]`},
		{"both", `{"spec":{"user":"a","resourceAttributes":{"verb":"get"},"nonResourceAttributes":{"path":"/x","verb":"get"}}}`,
			"spec.nonResourceAttributes: Invalid value: "},
		{"metadata", `{"metadata":{"name":"x"},"spec":{"user":"a","resourceAttributes":{"verb":"get"}}}`, "metadata: Invalid value: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := e.do("POST", sarPath, tt.body).expectStatus(t, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
			if !strings.Contains(s.Message, tt.want) {
				t.Errorf("message %q, want %q", s.Message, tt.want)
			}
			if tt.name == "metadata" && !strings.HasSuffix(s.Message, "must be empty") {
				t.Errorf("message %q, want metadata: must be empty", s.Message)
			}
		})
	}
}

// Creating a review is itself authorized: a node may under Node alone; a caller the authorizers
// refuse may not.
func TestReviewsAreAuthorized(t *testing.T) {
	e := nodeEnv(t, "Node")
	body := map[string]any{"spec": map[string]any{"token": "admin"}}
	if r := e.do("POST", tokenReviewsPath, body, as("node-a")...); r.code != http.StatusCreated || !strings.Contains(string(r.body), `"username":"admin"`) {
		t.Fatalf("a node's token review: %d %s", r.code, r.body)
	}
	sar := map[string]any{"spec": map[string]any{"user": "x", "nonResourceAttributes": map[string]any{"path": "/", "verb": "get"}}}
	if r := e.do("POST", sarPath, sar, as("node-a")...); r.code != http.StatusCreated {
		t.Fatalf("a node's subject access review: %d %s", r.code, r.body)
	}
	denied := newEnv(t, func(c *Config) { c.Authorizer = authz.AlwaysDeny() })
	st := denied.do("POST", sarPath, sar).expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden)
	if want := `subjectaccessreviews.authorization.orch.io is forbidden: User "system:anonymous" cannot create resource "subjectaccessreviews" in API group "authorization.orch.io" at the cluster scope: Everything is forbidden.`; st.Message != want {
		t.Errorf("message\n  %s\nwant\n  %s", st.Message, want)
	}
}

// A LocalSubjectAccessReview asks about any user in one namespace, checked as Kubernetes checks
// it; a namespace's admin may ask there and nowhere else.
func TestLocalSubjectAccessReview(t *testing.T) {
	e := rbacEnv(t)
	if r := e.do("POST", rbacPath+"/namespaces/default/rolebindings", bindingBody("alice-admin", "ClusterRole", "admin", "alice"), as("admin")...); r.code != http.StatusCreated {
		t.Fatalf("bind admin: %d %s", r.code, r.body)
	}
	if r := e.do("POST", rbacPath+"/namespaces/default/rolebindings", bindingBody("bob-view", "ClusterRole", "view", "bob"), as("admin")...); r.code != http.StatusCreated {
		t.Fatalf("bind view: %d %s", r.code, r.body)
	}
	e.allowedSoon("GET", "/api/v1/namespaces/default/pods", "bob", http.StatusOK)
	lsar := func(gv, body string) string {
		return `{"apiVersion":"` + gv + `","kind":"LocalSubjectAccessReview",` + body + `}`
	}
	bobCan := func(verb, resource, ns string) string {
		return `"spec":{"user":"bob","resourceAttributes":{"namespace":"` + ns + `","verb":"` + verb + `","resource":"` + resource + `"}}`
	}
	path := func(gv, ns string) string { return "/apis/" + gv + "/namespaces/" + ns + "/localsubjectaccessreviews" }
	for _, gv := range []string{"authorization.orch.io/v1", "authorization.k8s.io/v1"} {
		for _, tt := range []struct {
			verb, resource string
			allowed        bool
		}{{"list", "pods", true}, {"delete", "pods", false}, {"get", "secrets", false}} {
			r := e.do("POST", path(gv, "default"), lsar(gv, bobCan(tt.verb, tt.resource, "default")), as("alice")...)
			var got authorizationv1.LocalSubjectAccessReview
			if err := json.Unmarshal(r.body, &got); err != nil || r.code != http.StatusCreated {
				t.Fatalf("%s: %d %s", gv, r.code, r.body)
			}
			if got.APIVersion != gv || got.Kind != "LocalSubjectAccessReview" || got.Namespace != "default" || got.Status.Allowed != tt.allowed {
				t.Errorf("%s: may bob %s %s: %s", gv, tt.verb, tt.resource, r.body)
			}
		}
	}
	gv := "authorization.orch.io/v1"
	tests := []struct {
		name, ns, token, body string
		code                  int
		reason                metav1.StatusReason
		msg                   string
	}{
		{"another namespace's attributes", "default", "alice", lsar(gv, bobCan("list", "pods", "kube-system")), 422, metav1.StatusReasonInvalid,
			`LocalSubjectAccessReview.authorization.orch.io "" is invalid: spec.resourceAttributes.namespace: Invalid value: "kube-system": must match metadata.namespace`},
		{"the object in another namespace", "default", "alice", lsar(gv, `"metadata":{"namespace":"kube-system"},`+bobCan("list", "pods", "kube-system")), 400, metav1.StatusReasonBadRequest,
			"the namespace of the provided object does not match the namespace sent on the request"},
		{"a path", "default", "alice", lsar(gv, `"spec":{"user":"bob","nonResourceAttributes":{"path":"/healthz","verb":"get"}}`), 422, metav1.StatusReasonInvalid,
			`spec.nonResourceAttributes: Invalid value: {"path":"/healthz","verb":"get"}: disallowed on this kind of request`},
		{"no user", "default", "alice", lsar(gv, `"spec":{"resourceAttributes":{"namespace":"default","verb":"get"}}`), 422, metav1.StatusReasonInvalid,
			"spec.user: Invalid value: \"\": at least one of user or group must be specified"},
		{"a name", "default", "alice", lsar(gv, `"metadata":{"name":"x"},`+bobCan("list", "pods", "default")), 422, metav1.StatusReasonInvalid,
			"must be empty except for namespace"},
		{"a namespace the admin role is not bound in", "kube-system", "alice", lsar(gv, bobCan("list", "pods", "kube-system")), 403, metav1.StatusReasonForbidden,
			`localsubjectaccessreviews.authorization.orch.io is forbidden: User "alice" cannot create resource "localsubjectaccessreviews" in API group "authorization.orch.io" in the namespace "kube-system"`},
		{"a viewer", "default", "bob", lsar(gv, bobCan("list", "pods", "default")), 403, metav1.StatusReasonForbidden, `User "bob" cannot create resource "localsubjectaccessreviews"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := e.do("POST", path(gv, tt.ns), tt.body, as(tt.token)...).expectStatus(t, tt.code, tt.reason)
			if !strings.Contains(s.Message, tt.msg) {
				t.Errorf("message\n  %s\nwant it to contain\n  %s", s.Message, tt.msg)
			}
		})
	}
}

// kubectl auth whoami: who the server takes the requesting user for, under either group name.
func TestSelfSubjectReview(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Authenticator = authn.Union(tokenFile(t), authn.Anonymous()) })
	for _, gv := range []string{"authentication.orch.io/v1", "authentication.k8s.io/v1"} {
		body := map[string]any{"apiVersion": gv, "kind": "SelfSubjectReview"}
		r := e.do("POST", "/apis/"+gv+"/selfsubjectreviews", body, as("good-token")...)
		var got authenticationv1.SelfSubjectReview
		if err := json.Unmarshal(r.body, &got); err != nil || r.code != http.StatusCreated {
			t.Fatalf("%s: %d %s", gv, r.code, r.body)
		}
		want := authenticationv1.UserInfo{Username: "alice", UID: "u-1", Groups: []string{"admins", "devs", "system:authenticated"}}
		if got.APIVersion != gv || got.Kind != "SelfSubjectReview" || got.CreationTimestamp.IsZero() || !reflect.DeepEqual(got.Status.UserInfo, want) {
			t.Errorf("%s: %s", gv, r.body)
		}
	}
	r := e.do("POST", "/apis/authentication.orch.io/v1/selfsubjectreviews", map[string]any{"kind": "SelfSubjectReview"})
	if r.code != http.StatusCreated || !strings.Contains(string(r.body), `"username":"system:anonymous"`) {
		t.Errorf("anonymous: %d %s", r.code, r.body)
	}
}
