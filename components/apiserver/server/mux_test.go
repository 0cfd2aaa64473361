package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// plainMux serves every request as http.ServeMux with the same patterns does: the same handler,
// r.Pattern, code, redirect and body, for clean paths and others, each method, each of the
// server's patterns and the paths around them; and with a pattern that is not a path alone, all
// its requests are the mux's.
func TestPlainMuxIsServeMux(t *testing.T) {
	served := []string{
		"/openapi/", "/apis/", "/apis", "/api/", "/api",
		"/apis/coordination.k8s.io/v1", "/apis/coordination.k8s.io/v1/", "/apis/events.k8s.io/v1/",
		"/version", "/healthz", "/livez", "/readyz", "/metrics",
		"/debug/pprof", "/debug/pprof/", "/debug/pprof/profile", "/tree/", "/",
	}
	targets := []string{
		"/api/v1/nodes/node-1/status", "/apis/coordination.orch.io/v1/namespaces/kube-node-lease/leases/node-1",
		"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n", "/apis/coordination.k8s.io",
		"/apis/coordination.k8s.io/v1beta1/x", "/apisx", "/apix/v1", "/api/v1//nodes", "/api/v1/./nodes",
		"/api/../apis/x", "/api/v1/nodes/", "/api/v1/nodes/a%2Fb", "/api/v1/nodes/a%20b", "/api/v1/nodes/a%41",
		"/tree", "/tree/x", "/tree/", "/openapi", "/openapi/v3", "/debug/pprof/heap", "/debug", "/x/..", "/.", "*", "/tree%2Fx",
		"/api%2Fv1/nodes",
	}
	for _, p := range served {
		trimmed := strings.TrimSuffix(p, "/")
		targets = append(targets, p, p+"x", p+"/", p+"/x", trimmed, trimmed+"/x/y")
	}
	for _, extra := range [][]string{nil, {"GET /items/{id}"}, {"example.com/"}, {"/a%2Fb/"}} {
		patterns := append(append([]string(nil), served...), extra...)
		plain, mux := newPlainMux(), http.NewServeMux()
		for _, p := range patterns {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, "%s served %q as %q (%q)", p, r.URL.Path, r.Pattern, r.PathValue("id"))
			})
			plain.Handle(p, h)
			mux.Handle(p, h)
		}
		if want := len(extra) == 0; plain.plain != want {
			t.Errorf("patterns %q: plain %v, want %v", patterns, plain.plain, want)
		}
		for _, target := range targets {
			for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodConnect, http.MethodOptions} {
				if target == "" || target == "*" && method != http.MethodOptions {
					continue
				}
				sameRouting(t, fmt.Sprintf("%v, %s %s: plainMux", extra, method, target), "ServeMux", method, target, plain, mux)
			}
		}
	}
}

// sameRouting serves method target to got and want and fails t where their codes, redirects,
// bodies or chosen patterns differ, naming each side as it is labelled.
func sameRouting(t *testing.T, gotLabel, wantLabel, method, target string, gotH, wantH http.Handler) {
	t.Helper()
	got, want := httptest.NewRecorder(), httptest.NewRecorder()
	gotReq, wantReq := httptest.NewRequest(method, target, nil), httptest.NewRequest(method, target, nil)
	if target == "*" { // as the mux sees it whatever the path
		gotReq.URL.Path, wantReq.URL.Path = "/", "/"
	}
	gotH.ServeHTTP(got, gotReq)
	wantH.ServeHTTP(want, wantReq)
	if got.Code != want.Code || got.Header().Get("Location") != want.Header().Get("Location") ||
		got.Body.String() != want.Body.String() || gotReq.Pattern != wantReq.Pattern {
		t.Errorf("%s %d %q %q (pattern %q), %s %d %q %q (pattern %q)", gotLabel,
			got.Code, got.Header().Get("Location"), got.Body, gotReq.Pattern,
			wantLabel, want.Code, want.Header().Get("Location"), want.Body, wantReq.Pattern)
	}
}

// A clean path's handler is chosen without the mux's allocations (six a request).
func TestPlainMuxAllocates(t *testing.T) {
	m := newPlainMux()
	m.Handle("/api/", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	m.Handle("/", http.NotFoundHandler())
	r := httptest.NewRequest(http.MethodPut, "/api/v1/nodes/node-1/status", nil)
	if n := testing.AllocsPerRun(100, func() { m.ServeHTTP(nil, r) }); n != 0 {
		t.Errorf("plainMux allocated %v times", n)
	}
}

// BenchmarkPlainMuxMatch is the choice of a node status post's and a lease renewal's handlers
// among patterns of the server's Container's shape: seven group versions' roots and "/".
func BenchmarkPlainMuxMatch(b *testing.B) {
	m := newPlainMux()
	h := http.NotFoundHandler()
	for _, gv := range []string{"/api/v1", "/apis/rbac.authorization.orch.io/v1", "/apis/coordination.orch.io/v1",
		"/apis/events.orch.io/v1", "/apis/apps/v1", "/apis/batch/v1", "/apis/policy/v1"} {
		m.Handle(gv, h)
		m.Handle(gv+"/", h)
	}
	m.Handle("/", h)
	for b.Loop() {
		m.match("/api/v1/nodes/node-1234/status")
		m.match("/apis/coordination.orch.io/v1/namespaces/kube-node-lease/leases/node-1234")
	}
}
