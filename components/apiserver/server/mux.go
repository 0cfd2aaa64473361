package server

import (
	"net/http"
	"path"
	"strings"

	restful "github.com/emicklei/go-restful/v3"
)

// plainMux is an http.ServeMux that chooses the handler of a clean path itself, as the mux would,
// while every pattern is a path alone (no method, host, wildcard or escape): the pattern equal to
// the path, else the longest pattern ending in "/" that begins it. The mux's own match allocated
// six times a request, every node status post and lease renewal among them. Anything else (a path
// to clean, escape or redirect, "*", a pattern of another form) is the mux's; a clean path of a
// CONNECT is matched as any other's.
type plainMux struct {
	mux      *http.ServeMux
	plain    bool                    // every pattern is a path alone
	exact    map[string]http.Handler // the patterns not ending in "/"
	prefixes map[string]plainPrefix  // the others
	trees    map[string]bool         // the others without their "/"
}

type plainPrefix struct {
	pattern string
	handler http.Handler
}

func newPlainMux() *plainMux {
	return &plainMux{mux: http.NewServeMux(), plain: true, exact: map[string]http.Handler{}, prefixes: map[string]plainPrefix{}, trees: map[string]bool{}}
}

// Handle registers h for pattern, as http.ServeMux.Handle does (and panics as it does).
func (m *plainMux) Handle(pattern string, h http.Handler) {
	m.mux.Handle(pattern, h)
	switch {
	case !strings.HasPrefix(pattern, "/") || strings.ContainsAny(pattern, " \t{}%"):
		m.plain = false
	case strings.HasSuffix(pattern, "/"):
		m.prefixes[pattern] = plainPrefix{pattern, h}
		m.trees[strings.TrimSuffix(pattern, "/")] = true
	default:
		m.exact[pattern] = h
	}
}

// HandleFunc registers f for pattern, as http.ServeMux.HandleFunc does.
func (m *plainMux) HandleFunc(pattern string, f func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(f))
}

func (m *plainMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.clean(r) {
		if h, pattern, ok := m.match(r.URL.Path); ok {
			r.Pattern = pattern // as the mux sets it
			h.ServeHTTP(w, r)
			return
		}
	}
	m.mux.ServeHTTP(w, r)
}

// clean tells whether m chooses r's handler itself: r's path is clean, and every pattern a path.
func (m *plainMux) clean(r *http.Request) bool {
	p := r.URL.Path
	return m.plain && r.RequestURI != "*" && r.URL.EscapedPath() == p && path.Clean(p) == p
}

// match is the handler and pattern of the clean path p; not ok where the mux would redirect p to
// p+"/" or has no pattern for it. A pattern ending in "/" that begins p ends at one of p's slashes:
// they are looked up from the last, a map lookup a segment (trying each pattern in turn, longest
// first, with p+"/" made for each, took a quarter of a microsecond among eight patterns).
func (m *plainMux) match(p string) (http.Handler, string, bool) {
	if h, ok := m.exact[p]; ok {
		return h, p, true
	}
	if m.trees[p] {
		return nil, "", false // the mux redirects /tree to /tree/
	}
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			if pp, ok := m.prefixes[p[:i+1]]; ok {
				return pp.handler, pp.pattern, true
			}
		}
	}
	return nil, "", false
}

// containerMux serves a request to a go-restful Container as the Container does, calling its
// dispatch directly where the Container's own ServeMux would hand it there: a clean path, as
// plainMux matches it, under the patterns the Container registered for its web services. That
// mux's match allocated as the outer one's did, at every node status post and lease renewal.
// Anything else (a path to clean, escape or redirect, no pattern) is the Container's. The server
// does not enable the Container's content encoding, which its ServeHTTP alone applies.
type containerMux struct {
	container *restful.Container
	roots     *plainMux // the Container's patterns, each to its dispatch
}

// dispatchDirectly is off only in the test that compares the server's answers with and without
// containerMux.
var dispatchDirectly = true

// newContainerMux serves c, whose web services are all added: their patterns are the ones
// go-restful's Container.Add registered: the fixed prefix of each root path, and that prefix with
// a "/", up to the first service on the root, whose "/" takes every path.
func newContainerMux(c *restful.Container) *containerMux {
	m := &containerMux{container: c, roots: newPlainMux()}
	dispatch := http.HandlerFunc(c.Dispatch)
	for _, ws := range c.RegisteredWebServices() { // no two on one root: Add exits
		pattern, _, _ := strings.Cut(ws.RootPath(), "{")
		if pattern == "/" || pattern == "" {
			m.roots.Handle("/", dispatch)
			break
		}
		m.roots.Handle(pattern, dispatch)
		if !strings.HasSuffix(pattern, "/") {
			m.roots.Handle(pattern+"/", dispatch)
		}
	}
	return m
}

func (m *containerMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if m.roots.clean(r) {
		if h, pattern, ok := m.roots.match(r.URL.Path); ok {
			r.Pattern = pattern // as the Container's mux sets it
			h.ServeHTTP(w, r)
			return
		}
	}
	m.container.ServeHTTP(w, r)
}
