package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/emicklei/go-restful/v3"
)

func routeService(root string, handler string) *restful.WebService {
	ws := new(restful.WebService)
	ws.Path(root).Produces("application/json")
	noop := func(*restful.Request, *restful.Response) {}
	ws.Route(ws.GET("/{name}").To(noop).Operation(handler + "-get"))
	ws.Route(ws.POST("/").Consumes("application/json").To(noop).Operation(handler + "-create"))
	ws.Route(ws.GET("/").To(noop).Operation(handler + "-list"))
	return ws
}

// The cache chooses the routes CurlyRouter chooses, the second time from memory, fails as it does
// without remembering the failure, and chooses afresh once the services change.
func TestRouteCacheChoosesAsCurlyRouter(t *testing.T) {
	services := []*restful.WebService{routeService("/a", "a"), routeService("/a/b", "b")}
	cache := &routeCache{}
	requests := []struct{ method, path, contentType, accept string }{
		{"GET", "/a/x", "", ""},
		{"GET", "/a/b/", "", "application/json"},
		{"POST", "/a/", "application/json", ""},
		{"POST", "/a/b/", "application/json", "application/json"},
		{"POST", "/a/", "application/yaml", ""}, // 415
		{"DELETE", "/a/x", "", ""},              // 405
		{"GET", "/a/x", "", "application/yaml"}, // 406
		{"GET", "/c", "", ""},                   // 404
		// Other names take the remembered selection of their shape; a name that is another
		// route's literal segment, has a custom verb's colon, or is empty is its own.
		{"GET", "/a/y", "", ""},
		{"GET", "/a/b", "", ""},
		{"GET", "/a/y:z", "", ""},
		{"GET", "/a//", "", ""},
		{"POST", "/a/b/", "application/json", ""},
	}
	check := func(round string, services []*restful.WebService) {
		for _, q := range requests {
			r := httptest.NewRequest(q.method, q.path, nil)
			r.Header.Set("Content-Type", q.contentType)
			r.Header.Set("Accept", q.accept)
			wantWS, wantRoute, wantErr := restful.CurlyRouter{}.SelectRoute(services, r)
			gotWS, gotRoute, gotErr := cache.SelectRoute(services, r)
			if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && wantErr.Error() != gotErr.Error()) {
				t.Errorf("%s: %s %s: error %v, want %v", round, q.method, q.path, gotErr, wantErr)
				continue
			}
			if gotWS != wantWS || (wantRoute == nil) != (gotRoute == nil) || (wantRoute != nil && gotRoute.Operation != wantRoute.Operation) {
				t.Errorf("%s: %s %s: chose %v %v, want %v %v", round, q.method, q.path, gotWS, gotRoute, wantWS, wantRoute)
			}
		}
	}
	check("first", services)
	if n := len(cache.entries); n != 8 {
		t.Errorf("%d selections remembered, want the 8 shapes that succeeded (/a/y shares /a/x's)", n)
	}
	check("from memory", services)
	// A service added for a longer root takes the paths under it from then on.
	services = append(services[:2:2], routeService("/a/x", "x"))
	check("services changed", services)
	if ws, _, err := cache.SelectRoute(services, httptest.NewRequest(http.MethodGet, "/a/x/", nil)); err != nil || ws != services[2] {
		t.Errorf("GET /a/x/ after the service was added: %v %v", ws, err)
	}
	// A parameter with a regular expression tells names apart: every path is its own key then.
	digits := new(restful.WebService)
	digits.Path("/d").Route(digits.GET("/{n:[0-9]+}").To(func(*restful.Request, *restful.Response) {}).Operation("d-get"))
	services = append(services[:3:3], digits)
	requests = append(requests, struct{ method, path, contentType, accept string }{"GET", "/d/1", "", ""},
		struct{ method, path, contentType, accept string }{"GET", "/d/x", "", ""}) // 404
	check("regular expression", services)
	check("regular expression, from memory", services)
	if cache.literals != nil {
		t.Errorf("segments %v kept as literals with a regular expression among the routes", cache.literals)
	}
}

// Every node's status and lease paths share their shape's entry: the cache holds one selection
// for any number of nodes.
func TestRouteCacheKeysNamesByShape(t *testing.T) {
	ws := routeService("/api/v1/nodes", "nodes")
	ws.Route(ws.PUT("/{name}/status").To(func(*restful.Request, *restful.Response) {}).Operation("nodes-status"))
	services := []*restful.WebService{ws}
	cache := &routeCache{}
	for i := range maxCachedRoutes + 10 {
		r := httptest.NewRequest(http.MethodPut, fmt.Sprintf("/api/v1/nodes/node-%d/status", i), nil)
		if _, route, err := cache.SelectRoute(services, r); err != nil || route.Operation != "nodes-status" {
			t.Fatalf("node %d: %v %v", i, route, err)
		}
	}
	if n := len(cache.entries); n != 1 {
		t.Errorf("%d selections remembered, want 1", n)
	}
}
