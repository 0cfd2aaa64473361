package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Kubernetes' names of the groups orch renames are served over the same storage: an object written
// under one name is read under the other, each answer naming the group it was asked under.
func TestKubernetesGroupNamesServeTheSameObjects(t *testing.T) {
	e := rbacEnv(t)
	k8sRoles := "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles"
	body := `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"reader"},` +
		`"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}`
	r := e.do("POST", k8sRoles, body, as("admin")...)
	if r.code != http.StatusCreated || !strings.Contains(string(r.body), `"apiVersion":"rbac.authorization.k8s.io/v1"`) {
		t.Fatalf("create under Kubernetes' name: %d %s", r.code, r.body)
	}
	r = e.do("GET", rbacPath+"/namespaces/default/roles/reader", nil, as("admin")...)
	if r.code != http.StatusOK || !strings.Contains(string(r.body), `"apiVersion":"rbac.authorization.orch.io/v1"`) {
		t.Fatalf("read under orch's name: %d %s", r.code, r.body)
	}
	var list rbacv1.RoleList
	r = e.do("GET", k8sRoles, nil, as("admin")...)
	if err := json.Unmarshal(r.body, &list); err != nil || list.APIVersion != "rbac.authorization.k8s.io/v1" || len(list.Items) != 1 {
		t.Fatalf("list under Kubernetes' name: %d %s", r.code, r.body)
	}
	// A server-side apply in YAML names Kubernetes' group version.
	apply := "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: applied\nrules:\n- apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [list]\n"
	r = e.do("PATCH", k8sRoles+"/applied?fieldManager=kubectl", apply, append(as("admin"), "Content-Type", "application/apply-patch+yaml")...)
	if r.code != http.StatusCreated || !strings.Contains(string(r.body), `"apiVersion":"rbac.authorization.k8s.io/v1"`) {
		t.Fatalf("apply under Kubernetes' name: %d %s", r.code, r.body)
	}
	// kubectl's typed commands post protobuf, its envelope naming Kubernetes' group version.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "from-protobuf"}, Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
	raw, err := role.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	envelope, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"}, Raw: raw}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	r = e.do("POST", k8sRoles, append([]byte("k8s\x00"), envelope...), append(as("admin"), "Content-Type", "application/vnd.kubernetes.protobuf",
		"Accept", "application/vnd.kubernetes.protobuf, application/json")...)
	if r.code != http.StatusCreated || !strings.Contains(string(r.body), `"apiVersion":"rbac.authorization.k8s.io/v1"`) {
		t.Fatalf("protobuf create under Kubernetes' name: %d %q", r.code, r.body)
	}
	// Answers there are JSON.
	r = e.do("GET", k8sRoles+"/reader", nil, append(as("admin"), "Accept", "application/vnd.kubernetes.protobuf")...)
	if r.code != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
		t.Errorf("protobuf asked under Kubernetes' name: %d %s", r.code, r.header.Get("Content-Type"))
	}
	// The group's own discovery document.
	var resources metav1.APIResourceList
	decode(t, e.do("GET", "/apis/rbac.authorization.k8s.io/v1", nil, as("admin")...), &resources)
	if resources.GroupVersion != "rbac.authorization.k8s.io/v1" || len(resources.APIResources) != 4 {
		t.Errorf("/apis/rbac.authorization.k8s.io/v1 = %+v", resources)
	}
	// Short names stay with orch's group: kubectl would warn that csr names two resources.
	decode(t, e.do("GET", "/apis/certificates.k8s.io/v1", nil, as("admin")...), &resources)
	if resources.GroupVersion != "certificates.k8s.io/v1" || len(resources.APIResources) == 0 || len(resources.APIResources[0].ShortNames) != 0 {
		t.Errorf("/apis/certificates.k8s.io/v1 = %+v", resources)
	}
}

// kubectl auth can-i and its --list: the requesting user's own access, under either group name.
func TestSelfSubjectReviews(t *testing.T) {
	e := rbacEnv(t)
	if r := e.do("POST", rbacPath+"/namespaces/default/rolebindings", bindingBody("alice-view", "ClusterRole", "view", "alice"), as("admin")...); r.code != http.StatusCreated {
		t.Fatalf("bind view: %d %s", r.code, r.body)
	}
	e.allowedSoon("GET", "/api/v1/namespaces/default/pods", "alice", http.StatusOK)
	canI := func(gv, verb, resource, sub, ns string) authorizationv1.SelfSubjectAccessReview {
		t.Helper()
		body := map[string]any{"apiVersion": gv, "kind": "SelfSubjectAccessReview", "spec": map[string]any{
			"resourceAttributes": map[string]any{"verb": verb, "resource": resource, "subresource": sub, "namespace": ns}}}
		r := e.do("POST", "/apis/"+gv+"/selfsubjectaccessreviews", body, as("alice")...)
		var review authorizationv1.SelfSubjectAccessReview
		if err := json.Unmarshal(r.body, &review); err != nil || r.code != http.StatusCreated || review.APIVersion != gv {
			t.Fatalf("SelfSubjectAccessReview: %d %s", r.code, r.body)
		}
		return review
	}
	for _, gv := range []string{"authorization.orch.io/v1", "authorization.k8s.io/v1"} {
		if got := canI(gv, "list", "pods", "", "default"); !got.Status.Allowed || !strings.Contains(got.Status.Reason, `RoleBinding "alice-view/default"`) {
			t.Errorf("%s: list pods: %+v", gv, got.Status)
		}
		for _, denied := range [][3]string{{"list", "secrets", ""}, {"delete", "pods", ""}, {"create", "pods", "exec"}} {
			if got := canI(gv, denied[0], denied[1], denied[2], "default"); got.Status.Allowed {
				t.Errorf("%s: %v allowed", gv, denied)
			}
		}
		if got := canI(gv, "get", "pods", "log", "default"); !got.Status.Allowed {
			t.Errorf("%s: view reads pods/log: %+v", gv, got.Status)
		}
	}
	// kubectl auth can-i posts protobuf.
	ssar := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "watch", Resource: "pods", Namespace: "default"}}}
	raw, err := ssar.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	envelope, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "authorization.k8s.io/v1", Kind: "SelfSubjectAccessReview"}, Raw: raw}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	r := e.do("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", append([]byte("k8s\x00"), envelope...),
		append(as("alice"), "Content-Type", "application/vnd.kubernetes.protobuf", "Accept", "application/vnd.kubernetes.protobuf, application/json")...)
	if r.code != http.StatusCreated || !strings.Contains(string(r.body), `"allowed":true`) {
		t.Errorf("protobuf SelfSubjectAccessReview: %d %q", r.code, r.body)
	}
	e.do("POST", "/apis/authorization.orch.io/v1/selfsubjectaccessreviews", map[string]any{"kind": "SelfSubjectAccessReview", "spec": map[string]any{}}, as("alice")...).
		expectStatus(t, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)

	body := map[string]any{"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": map[string]any{"namespace": "default"}}
	r = e.do("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", body, as("alice")...)
	var rules authorizationv1.SelfSubjectRulesReview
	if err := json.Unmarshal(r.body, &rules); err != nil || r.code != http.StatusCreated {
		t.Fatalf("SelfSubjectRulesReview: %d %s", r.code, r.body)
	}
	if rules.Status.Incomplete || rules.Status.EvaluationError != "" {
		t.Errorf("RBAC alone lists everything: %+v", rules.Status)
	}
	text := string(r.body)
	for _, want := range []string{`"selfsubjectaccessreviews"`, `"pods/log"`, `"/healthz"`, `"/apis/*"`} {
		if !strings.Contains(text, want) {
			t.Errorf("rules lack %s: %s", want, text)
		}
	}
	if strings.Contains(text, `"secrets"`) {
		t.Errorf("rules list secrets: %s", text)
	}
	body["apiVersion"], body["spec"] = "authorization.orch.io/v1", map[string]any{}
	e.do("POST", "/apis/authorization.orch.io/v1/selfsubjectrulesreviews", body, as("alice")...).expectStatus(t, http.StatusBadRequest, metav1.StatusReasonBadRequest)
}
