package server

import (
	"net/http"
	"strings"
	"testing"
)

// /readyz fails with the shutdown check once the server is terminating; /healthz and /livez do not.
func TestReadyzFailsWhenTerminating(t *testing.T) {
	terminating := make(chan struct{})
	e := newEnv(t, func(c *Config) { c.Terminating = terminating })
	if r := e.do(http.MethodGet, "/readyz?verbose", nil); r.code != http.StatusOK || !strings.Contains(string(r.body), "[+]shutdown ok") {
		t.Fatalf("before: %d %s", r.code, r.body)
	}
	close(terminating)
	if r := e.do(http.MethodGet, "/readyz?verbose", nil); r.code != http.StatusInternalServerError || !strings.Contains(string(r.body), "[-]shutdown failed: process is shutting down") {
		t.Fatalf("terminating: %d %s", r.code, r.body)
	}
	for _, path := range []string{"/healthz", "/livez"} {
		if r := e.do(http.MethodGet, path, nil); r.code != http.StatusOK {
			t.Errorf("%s while terminating: %d %s", path, r.code, r.body)
		}
	}
}
