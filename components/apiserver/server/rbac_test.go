package server

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/authz/rbac"
)

const rbacPath = "/apis/rbac.authorization.orch.io/v1"

// rbacEnv serves with --authorization-mode=RBAC and tokens for an administrator (system:masters),
// alice and bob; tune, if given, adjusts the rest.
func rbacEnv(t *testing.T, tune ...func(*Config)) *env {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	tokens := "admin,admin,u-0,system:masters\nalice,alice,u-1,\nbob,bob,u-2,\n"
	if err := os.WriteFile(path, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	tf, err := authn.NewTokenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	roles := rbac.NewIndex()
	az, err := authz.New(authz.ModeRBAC, nil, nil, rbac.Authorizer(roles))
	if err != nil {
		t.Fatal(err)
	}
	return newEnv(t, append([]func(*Config){func(c *Config) {
		c.Authenticator = authn.Union(tf)
		c.Authorizer = az
		c.Roles = roles
	}}, tune...)...)
}

func roleBody(name string, rules ...rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.orch.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
}

func bindingBody(name, kind, role string, users ...string) *rbacv1.RoleBinding {
	b := &rbacv1.RoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.orch.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.orch.io", Kind: kind, Name: role}}
	for _, u := range users {
		b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: "User", Name: u})
	}
	return b
}

// allowedSoon waits for the index to take in a write: what a request is allowed follows it.
func (e *env) allowedSoon(method, path, token string, want int) {
	e.t.Helper()
	eventually(e.t, func() bool { return e.do(method, path, nil, as(token)...).code == want })
}

func TestRBACBootstrapPolicyAndAggregation(t *testing.T) {
	e := rbacEnv(t)
	r := e.do("GET", rbacPath+"/clusterroles/cluster-admin", nil, as("admin")...)
	if r.code != http.StatusOK || !strings.Contains(string(r.body), `"orch.io/bootstrapping":"rbac-defaults"`) {
		t.Fatalf("cluster-admin: %d %s", r.code, r.body)
	}
	if r := e.do("GET", rbacPath+"/clusterrolebindings/system:basic-user", nil, as("admin")...); r.code != http.StatusOK {
		t.Fatalf("system:basic-user binding: %d %s", r.code, r.body)
	}
	// view gathers system:aggregate-to-view's rules; edit gathers view's in turn.
	eventually(t, func() bool {
		body := string(e.do("GET", rbacPath+"/clusterroles/edit", nil, as("admin")...).body)
		return strings.Contains(body, `"pods/log"`) && strings.Contains(body, `"pods/exec"`)
	})
	// A role labelled for view is gathered into it.
	custom := map[string]any{"apiVersion": "rbac.authorization.orch.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": "widgets-view", "labels": map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
		"rules":    []map[string]any{{"apiGroups": []string{"example.com"}, "resources": []string{"widgets"}, "verbs": []string{"get"}}}}
	if r := e.do("POST", rbacPath+"/clusterroles", custom, as("admin")...); r.code != http.StatusCreated {
		t.Fatalf("create widgets-view: %d %s", r.code, r.body)
	}
	eventually(t, func() bool {
		return strings.Contains(string(e.do("GET", rbacPath+"/clusterroles/view", nil, as("admin")...).body), `"widgets"`)
	})
}

func TestRBACAuthorizesByBindings(t *testing.T) {
	e := rbacEnv(t)
	pods := "/api/v1/namespaces/default/pods"
	e.allowedSoon("GET", pods, "admin", http.StatusOK)
	s := e.do("GET", pods, nil, as("alice")...).expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden)
	if !strings.Contains(s.Message, `User "alice" cannot list resource "pods"`) {
		t.Errorf("forbidden message: %s", s.Message)
	}
	if r := e.do("POST", rbacPath+"/namespaces/default/rolebindings", bindingBody("alice-view", "ClusterRole", "view", "alice"), as("admin")...); r.code != http.StatusCreated {
		t.Fatalf("bind view: %d %s", r.code, r.body)
	}
	e.allowedSoon("GET", pods, "alice", http.StatusOK)
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/api/v1/namespaces/kube-system/pods", http.StatusForbidden}, // another namespace
		{"/api/v1/namespaces/default/secrets", http.StatusForbidden},  // view reads no secrets
		{"/api/v1/namespaces/default/configmaps", http.StatusOK},
		{"/api/v1/namespaces", http.StatusForbidden}, // the cluster scope
		{"/healthz", http.StatusOK},                  // system:public-info-viewer
		{"/apis", http.StatusOK},                     // system:discovery
		{"/metrics", http.StatusForbidden},
	} {
		if r := e.do("GET", tc.path, nil, as("alice")...); r.code != tc.want {
			t.Errorf("alice GET %s: %d, want %d", tc.path, r.code, tc.want)
		}
	}
	// Deleting the binding takes the access away.
	if r := e.do("DELETE", rbacPath+"/namespaces/default/rolebindings/alice-view", nil, as("admin")...); r.code != http.StatusOK {
		t.Fatalf("delete binding: %d %s", r.code, r.body)
	}
	e.allowedSoon("GET", pods, "alice", http.StatusForbidden)
}

func TestRBACEscalationPrevention(t *testing.T) {
	e := rbacEnv(t)
	ns := rbacPath + "/namespaces/default"
	getPods := rbacv1.PolicyRule{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	manager := roleBody("role-manager", getPods,
		rbacv1.PolicyRule{Verbs: []string{"create", "update"}, APIGroups: []string{"rbac.authorization.orch.io"}, Resources: []string{"roles", "rolebindings"}})
	if r := e.do("POST", ns+"/roles", manager, as("admin")...); r.code != http.StatusCreated {
		t.Fatalf("create role-manager: %d %s", r.code, r.body)
	}
	if r := e.do("POST", ns+"/rolebindings", bindingBody("bob-manages", "Role", "role-manager", "bob"), as("admin")...); r.code != http.StatusCreated {
		t.Fatalf("bind role-manager: %d %s", r.code, r.body)
	}
	e.allowedSoon("GET", "/api/v1/namespaces/default/pods", "bob", http.StatusOK)

	// What bob holds, he may grant; more, he may not.
	if r := e.do("POST", ns+"/roles", roleBody("pod-reader", getPods), as("bob")...); r.code != http.StatusCreated {
		t.Fatalf("bob creating a role he holds: %d %s", r.code, r.body)
	}
	deletePods := roleBody("pod-deleter", rbacv1.PolicyRule{Verbs: []string{"delete"}, APIGroups: []string{""}, Resources: []string{"pods"}})
	s := e.do("POST", ns+"/roles", deletePods, as("bob")...).expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden)
	want := `roles.rbac.authorization.orch.io "pod-deleter" is forbidden: user "bob" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:` +
		"\n" + `{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}`
	if s.Message != want {
		t.Errorf("escalation message:\n%s\nwant\n%s", s.Message, want)
	}
	// Nor through a subresource his rules do not reach.
	logs := roleBody("log-reader", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods/log"}})
	e.do("POST", ns+"/roles", logs, as("bob")...).expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden)
	// Updating his own role to more is the same escalation.
	grown := roleBody("pod-reader", getPods, rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}})
	e.do("PUT", ns+"/roles/pod-reader", grown, as("bob")...).expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden)

	// A binding grants its role's rules: binding edit is refused, binding what he holds is not.
	e.do("POST", ns+"/rolebindings", bindingBody("bob-edit", "ClusterRole", "edit", "bob"), as("bob")...).
		expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden)
	if r := e.do("POST", ns+"/rolebindings", bindingBody("alice-reads", "Role", "pod-reader", "alice"), as("bob")...); r.code != http.StatusCreated {
		t.Fatalf("bob binding a role he holds: %d %s", r.code, r.body)
	}
	// A binding to a missing role is NotFound.
	e.do("POST", ns+"/rolebindings", bindingBody("ghost", "Role", "ghost", "alice"), as("bob")...).
		expectStatus(t, http.StatusNotFound, metav1.StatusReasonNotFound)

	// The bind verb on a role lets him bind it without holding it; escalate lets him write any role.
	delegate := roleBody("delegate", rbacv1.PolicyRule{Verbs: []string{"bind"}, APIGroups: []string{"rbac.authorization.orch.io"}, Resources: []string{"clusterroles"}, ResourceNames: []string{"edit"}},
		rbacv1.PolicyRule{Verbs: []string{"escalate"}, APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles"}})
	if r := e.do("POST", ns+"/roles", delegate, as("admin")...); r.code != http.StatusCreated {
		t.Fatalf("create delegate: %d %s", r.code, r.body)
	}
	if r := e.do("POST", ns+"/rolebindings", bindingBody("bob-delegate", "Role", "delegate", "bob"), as("admin")...); r.code != http.StatusCreated {
		t.Fatalf("bind delegate: %d %s", r.code, r.body)
	}
	eventually(t, func() bool {
		return e.do("POST", ns+"/rolebindings", bindingBody("bob-edit", "ClusterRole", "edit", "alice"), as("bob")...).code == http.StatusCreated
	})
	if r := e.do("POST", ns+"/roles", deletePods, as("bob")...); r.code != http.StatusCreated {
		t.Errorf("bob with escalate creating any role: %d %s", r.code, r.body)
	}
	// An aggregation rule gathers anything: only who holds everything may set one.
	agg := map[string]any{"apiVersion": "rbac.authorization.orch.io/v1", "kind": "ClusterRole", "metadata": map[string]any{"name": "gather"},
		"aggregationRule": map[string]any{"clusterRoleSelectors": []map[string]any{{"matchLabels": map[string]string{"x": "y"}}}}}
	s = e.do("POST", rbacPath+"/clusterroles", agg, as("bob")...).expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden)
	if !strings.Contains(s.Message, "cluster-admin privileges to use the aggregationRule") && !strings.Contains(s.Message, "cannot create resource") {
		t.Errorf("aggregation rule refusal: %s", s.Message)
	}
}

func TestRBACValidation(t *testing.T) {
	e := rbacEnv(t)
	for _, tc := range []struct {
		path  string
		body  any
		field string
	}{
		{"/namespaces/default/roles", roleBody("no-verbs", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}}), "rules[0].verbs"},
		{"/namespaces/default/roles", roleBody("url", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/x"}}), "rules[0].nonResourceURLs"},
		{"/namespaces/default/roles", roleBody("no-groups", rbacv1.PolicyRule{Verbs: []string{"get"}, Resources: []string{"pods"}}), "rules[0].apiGroups"},
		{"/namespaces/default/roles", roleBody("a/b"), "metadata.name"},
		{"/namespaces/default/rolebindings", bindingBody("bad-kind", "Secret", "x"), "roleRef.kind"},
		{"/namespaces/default/rolebindings", &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bad-group"}, RoleRef: rbacv1.RoleRef{APIGroup: "apps", Kind: "Role", Name: "x"}}, "roleRef.apiGroup"},
		{"/clusterrolebindings", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sa-no-ns"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "robot"}}}, "subjects[0].namespace"},
		{"/clusterrolebindings", &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "role-ref"}, RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "view"}}, "roleRef.kind"},
	} {
		s := e.do("POST", rbacPath+tc.path, tc.body, as("admin")...).expectStatus(t, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
		if !strings.Contains(s.Message, tc.field) {
			t.Errorf("%s: message %q does not name %s", tc.path, s.Message, tc.field)
		}
	}
	// A binding's role cannot change.
	if r := e.do("POST", rbacPath+"/namespaces/default/rolebindings", bindingBody("fixed", "ClusterRole", "view", "alice"), as("admin")...); r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	e.do("PUT", rbacPath+"/namespaces/default/rolebindings/fixed", bindingBody("fixed", "ClusterRole", "edit", "alice"), as("admin")...).
		expectStatus(t, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
}
