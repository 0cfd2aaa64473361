package server

import (
	"net/http"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Profiles are served to whom RBAC grants their non-resource URLs, as kube-apiserver serves them:
// the administrator (cluster-admin's "*"), not a user without a grant, then that user once a
// cluster role naming /debug/pprof/* is bound to them.
func TestProfilingIsAuthorized(t *testing.T) {
	e := rbacEnv(t, func(c *Config) { c.Profiling = true })
	e.allowedSoon("GET", "/debug/pprof/heap?debug=1", "admin", http.StatusOK)
	for _, tc := range []struct {
		path string
		want int
		body string
	}{
		{"/debug/pprof/", http.StatusOK, "Types of profiles available"},
		{"/debug/pprof/heap?debug=1", http.StatusOK, "heap profile:"},
		{"/debug/pprof/goroutine?debug=1", http.StatusOK, "goroutine profile:"},
		{"/debug/pprof/symbol", http.StatusOK, "num_symbols:"},
		{"/debug/pprof/cmdline", http.StatusNotFound, "Unknown profile"}, // not served, as in Kubernetes
	} {
		r := e.do("GET", tc.path, nil, as("admin")...)
		if r.code != tc.want || !strings.Contains(string(r.body), tc.body) {
			t.Errorf("admin GET %s: %d %.200s, want %d with %q", tc.path, r.code, r.body, tc.want, tc.body)
		}
	}
	redirect := e.client.CheckRedirect
	e.client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if r := e.do("GET", "/debug/pprof", nil, as("admin")...); r.code != http.StatusFound || r.header.Get("Location") != "/debug/pprof/" {
		t.Errorf("GET /debug/pprof: %d Location %q, want 302 to /debug/pprof/", r.code, r.header.Get("Location"))
	}
	e.client.CheckRedirect = redirect

	s := e.do("GET", "/debug/pprof/heap", nil, as("alice")...).expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden)
	if !strings.Contains(s.Message, `User "alice" cannot get path "/debug/pprof/heap"`) {
		t.Errorf("forbidden message: %s", s.Message)
	}
	profiler := &rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.orch.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: "profiler"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/debug/pprof/*"}}}}
	if r := e.do("POST", rbacPath+"/clusterroles", profiler, as("admin")...); r.code != http.StatusCreated {
		t.Fatalf("create profiler: %d %s", r.code, r.body)
	}
	binding := &rbacv1.ClusterRoleBinding{TypeMeta: metav1.TypeMeta{APIVersion: "rbac.authorization.orch.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "alice-profiles"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.orch.io", Kind: "ClusterRole", Name: "profiler"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "alice"}}}
	if r := e.do("POST", rbacPath+"/clusterrolebindings", binding, as("admin")...); r.code != http.StatusCreated {
		t.Fatalf("bind profiler: %d %s", r.code, r.body)
	}
	e.allowedSoon("GET", "/debug/pprof/heap", "alice", http.StatusOK)
	// The grant is for reading profiles, not the rest of the server.
	e.do("GET", "/metrics", nil, as("alice")...).expectStatus(t, http.StatusForbidden, metav1.StatusReasonForbidden)
}

// Without profiling (--profiling=false) the paths are not found, even by the administrator.
func TestProfilingOff(t *testing.T) {
	e := rbacEnv(t)
	e.allowedSoon("GET", "/api/v1/namespaces/default/pods", "admin", http.StatusOK)
	for _, path := range []string{"/debug/pprof", "/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/profile?seconds=1"} {
		e.do("GET", path, nil, as("admin")...).expectStatus(t, http.StatusNotFound, metav1.StatusReasonNotFound)
	}
}
