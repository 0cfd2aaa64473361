package server

import (
	"net/http"
	"path"
	"slices"
	"strings"
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
	prefixes []plainPrefix           // the others, longest first
}

type plainPrefix struct {
	pattern string
	handler http.Handler
}

func newPlainMux() *plainMux {
	return &plainMux{mux: http.NewServeMux(), plain: true, exact: map[string]http.Handler{}}
}

// Handle registers h for pattern, as http.ServeMux.Handle does (and panics as it does).
func (m *plainMux) Handle(pattern string, h http.Handler) {
	m.mux.Handle(pattern, h)
	switch {
	case !strings.HasPrefix(pattern, "/") || strings.ContainsAny(pattern, " \t{}%"):
		m.plain = false
	case strings.HasSuffix(pattern, "/"):
		m.prefixes = append(m.prefixes, plainPrefix{pattern, h})
		slices.SortStableFunc(m.prefixes, func(a, b plainPrefix) int { return len(b.pattern) - len(a.pattern) })
	default:
		m.exact[pattern] = h
	}
}

// HandleFunc registers f for pattern, as http.ServeMux.HandleFunc does.
func (m *plainMux) HandleFunc(pattern string, f func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(f))
}

func (m *plainMux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if m.plain && r.RequestURI != "*" && r.URL.EscapedPath() == p && path.Clean(p) == p {
		if h, pattern, ok := m.match(p); ok {
			r.Pattern = pattern // as the mux sets it
			h.ServeHTTP(w, r)
			return
		}
	}
	m.mux.ServeHTTP(w, r)
}

// match is the handler and pattern of the clean path p; not ok where the mux would redirect p to
// p+"/" or has no pattern for it.
func (m *plainMux) match(p string) (http.Handler, string, bool) {
	if h, ok := m.exact[p]; ok {
		return h, p, true
	}
	for _, pp := range m.prefixes {
		if pp.pattern == p+"/" {
			return nil, "", false // the mux redirects /tree to /tree/
		}
		if strings.HasPrefix(p, pp.pattern) {
			return pp.handler, pp.pattern, true
		}
	}
	return nil, "", false
}
