package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	restful "github.com/emicklei/go-restful/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apiserver/storage/memory"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// containerMux serves every request as the Container does: the same code, redirect, body and
// r.Pattern, for clean paths and others, each method, under web services with and without one
// on the root, a root with a parameter and a root ending in "/".
func TestContainerMuxIsContainer(t *testing.T) {
	probe := func(name, root string) *restful.WebService {
		ws := new(restful.WebService)
		ws.Path(root).Produces("*/*")
		h := func(req *restful.Request, resp *restful.Response) {
			fmt.Fprintf(resp, "%s served %q as %q (%q)", name, req.Request.URL.Path, req.Request.Pattern, req.PathParameters())
		}
		ws.Route(ws.GET("/").To(h))
		ws.Route(ws.GET("/{name}").To(h))
		ws.Route(ws.PUT("/{name}/status").To(h))
		return ws
	}
	sets := [][]*restful.WebService{
		{probe("core", "/api/v1"), probe("apps", "/apis/apps/v1"), probe("discovery", "/")},
		{probe("core", "/api/v1"), probe("apps", "/apis/apps/v1"), probe("any", "/apis/{group}/v2")},
		{probe("core", "/api/v1"), probe("slash", "/tree/")},
	}
	targets := []string{
		"/", "/api", "/api/", "/api/v1", "/api/v1/", "/api/v1/nodes", "/api/v1/nodes/", "/api/v1/nodes/n/status",
		"/api/v1//nodes", "/api/v1/./nodes", "/api/../apis/apps/v1", "/api/v1/nodes/a%2Fb", "/api/v1/nodes/a%20b",
		"/apis", "/apis/", "/apis/apps", "/apis/apps/v1", "/apis/apps/v1/x", "/apis/other/v2", "/apis/other/v2/x",
		"/tree", "/tree/", "/tree/x", "/apisx", "/x/..", "/.", "*", "/api%2Fv1/nodes",
	}
	for i, services := range sets {
		c := restful.NewContainer()
		c.Router(&routeCache{})
		for _, ws := range services {
			c.Add(ws)
		}
		direct := newContainerMux(c)
		for _, target := range targets {
			for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodConnect, http.MethodOptions} {
				if target == "*" && method != http.MethodOptions {
					continue
				}
				sameRouting(t, fmt.Sprintf("set %d, %s %s: containerMux", i, method, target), "Container", method, target, direct, c)
			}
		}
	}
}

// The server answers every request the same with the Container's dispatch called directly and
// through its ServeMux: each served resource's collection, object and subresource paths (from
// discovery), each method, and the paths around them (trailing slashes, paths to clean, escapes,
// unknown groups), with their codes, headers and bodies (UIDs, revisions and dates aside).
func TestServerDispatchesAsContainer(t *testing.T) {
	defer func() { dispatchDirectly = true }()
	handler := func(direct bool) http.Handler {
		dispatchDirectly = direct
		clk := clock.NewMock()
		clk.Set(start)
		st := memory.New(clk)
		t.Cleanup(func() { _ = st.Close() })
		stopping := make(chan struct{})
		t.Cleanup(func() { close(stopping) })
		h, err := New(Config{
			Clock: clk, Storage: st, EventTTL: time.Hour, Authenticator: authn.Anonymous(), Authorizer: authz.AlwaysAllow(),
			MinRequestTimeout: 30 * time.Minute, BookmarkInterval: time.Minute, Stopping: stopping, Terminating: stopping,
		})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	direct, viaMux := handler(true), handler(false)
	serve := func(h http.Handler, method, target string, body []byte) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, target, bytes.NewReader(body))
		if body != nil {
			r.Header.Set("Content-Type", "application/json")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	// The paths of every served resource, from discovery.
	var groupVersions []string
	var groups metav1.APIGroupList
	if err := json.Unmarshal(serve(direct, http.MethodGet, "/apis", nil).Body.Bytes(), &groups); err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.Groups {
		for _, v := range g.Versions {
			groupVersions = append(groupVersions, "/apis/"+v.GroupVersion)
		}
	}
	groupVersions = append(groupVersions, "/api/v1")
	targets := []string{"/", "/api", "/apis", "/apis/", "/api/", "/apis/nothing.example.com", "/apis/nothing.example.com/v1/x",
		"/apisx", "/api/v2", "/api/../apis", "/version", "/healthz", "/openapi/v2"}
	for _, gv := range groupVersions {
		targets = append(targets, gv, gv+"/", strings.TrimSuffix(gv, "/v1"), gv+"x")
		var resources metav1.APIResourceList
		if err := json.Unmarshal(serve(direct, http.MethodGet, gv, nil).Body.Bytes(), &resources); err != nil {
			t.Fatalf("%s: %v", gv, err)
		}
		for _, r := range resources.APIResources {
			name, sub, _ := strings.Cut(r.Name, "/")
			prefix := gv
			if r.Namespaced {
				targets = append(targets, gv+"/"+name)
				prefix += "/namespaces/default"
			}
			object := prefix + "/" + name + "/x"
			if sub != "" {
				targets = append(targets, object+"/"+sub, object+"/"+sub+"/", object+"//"+sub)
				continue
			}
			targets = append(targets, prefix+"/"+name, prefix+"/"+name+"/", object, object+"/", prefix+"//"+name+"/x",
				prefix+"/./"+name, object+"%2Fy", object+"/unknown")
		}
	}
	slices.Sort(targets)
	targets = slices.Compact(targets)
	// What differs between two servers whatever their routing: the random UIDs, and the revisions
	// their controllers' writes in the background took.
	varying := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|(resourceVersion\\?":\\?")[0-9]+`)
	normal := func(w *httptest.ResponseRecorder) string {
		return varying.ReplaceAllString(w.Body.String(), "${1}X")
	}
	// The servers' controllers bootstrap their objects in the background: the answers are
	// compared once both have them all.
	settled := func() bool {
		for _, p := range []string{"/apis/rbac.authorization.orch.io/v1/clusterroles", "/apis/rbac.authorization.orch.io/v1/clusterrolebindings", "/api/v1/namespaces"} {
			if normal(serve(direct, http.MethodGet, p, nil)) != normal(serve(viaMux, http.MethodGet, p, nil)) {
				return false
			}
		}
		return true
	}
	for deadline := time.Now().Add(10 * time.Second); !settled(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the two servers' bootstrapped objects differ")
		}
	}
	for _, target := range targets {
		for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodPost, http.MethodPatch, http.MethodDelete, http.MethodOptions} {
			if method == http.MethodDelete && !strings.Contains(target, "/x") {
				continue // a collection's delete, which the controllers would bootstrap again in their time
			}
			var body []byte
			if method == http.MethodPut || method == http.MethodPost || method == http.MethodPatch {
				body = []byte(`{"metadata":{"name":"x"}}`)
			}
			got, want := serve(direct, method, target, body), serve(viaMux, method, target, body)
			got.Header().Del("Date")
			want.Header().Del("Date")
			gotBody, wantBody := normal(got), normal(want)
			if got.Code != want.Code || fmt.Sprint(got.Header()) != fmt.Sprint(want.Header()) || gotBody != wantBody {
				t.Errorf("%s %s: direct %d %v %.300q, through the mux %d %v %.300q", method, target,
					got.Code, got.Header(), gotBody, want.Code, want.Header(), wantBody)
			}
		}
	}
	if len(targets) < 200 {
		t.Errorf("only %d paths", len(targets))
	}
}
