package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/authn"
)

// held is a handler that keeps each request until released, so a test can fill the in-flight slots.
type held struct {
	entered chan string
	release chan struct{}
}

func newHeld() *held { return &held{entered: make(chan string, 16), release: make(chan struct{})} }

func (h *held) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.entered <- r.Method + " " + r.URL.Path
	select {
	case <-h.release:
		w.WriteHeader(http.StatusOK)
	case <-r.Context().Done():
	}
}

// asUser authenticates every request as user in groups, as the authentication filter would.
func asUser(next http.Handler, name string, groups ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), &authn.UserInfo{Name: name, Groups: groups})))
	})
}

// fetch sends one request; goroutines use it, where a test must not call Fatal.
func fetch(c *http.Client, method, url string) (int, http.Header, string, error) {
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		return 0, nil, "", err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body), err
}

func get(t *testing.T, c *http.Client, method, url string) (int, http.Header, string) {
	t.Helper()
	code, header, body, err := fetch(c, method, url)
	if err != nil {
		t.Fatal(err)
	}
	return code, header, body
}

// With the read-only and the mutating slots full, the next request of each kind is answered 429 at
// once with Retry-After, while watches, health checks and system:masters still get through.
func TestMaxInFlight(t *testing.T) {
	h := newHeld()
	limits := newInFlight(Limits{MaxRequestsInFlight: 1, MaxMutatingRequestsInFlight: 1}, prometheus.NewRegistry()).wrap(h)
	srv := httptest.NewServer(asUser(limits, "alice", "system:authenticated"))
	defer srv.Close()
	admin := httptest.NewServer(asUser(limits, "admin", "system:masters"))
	defer admin.Close()
	c := srv.Client()
	const events = "/apis/events.orch.io/v1/namespaces/default/events"

	var wg sync.WaitGroup
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		wg.Add(1)
		go func() { defer wg.Done(); _, _, _, _ = fetch(c, method, srv.URL+events) }()
		<-h.entered
	}
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		code, header, body := get(t, c, method, srv.URL+events)
		if code != http.StatusTooManyRequests || header.Get("Retry-After") != "1" || !strings.Contains(body, "Too many requests, please try again later.") {
			t.Errorf("%s over the limit: %d Retry-After %q %q, want 429 with Retry-After 1", method, code, header.Get("Retry-After"), body)
		}
	}
	for _, tc := range []struct{ url, what string }{
		{srv.URL + events + "?watch=true", "a watch"},
		{srv.URL + "/readyz", "a health check"},
		{admin.URL + events, "system:masters"},
	} {
		wg.Add(1)
		go func() { defer wg.Done(); _, _, _, _ = fetch(c, http.MethodGet, tc.url) }()
		select {
		case <-h.entered:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s was held back by the limit", tc.what)
		}
	}
	close(h.release)
	wg.Wait()
	if code, _, _ := get(t, c, http.MethodGet, srv.URL+events); code != http.StatusOK {
		t.Errorf("after the slots freed: %d, want 200", code)
	}
}

// A request still running at --request-timeout is answered 504 with Kubernetes' Status and its
// context cancelled; watches are not timed out this way.
func TestRequestTimeout(t *testing.T) {
	clk := clock.NewMock()
	h := newHeld()
	cancelled := make(chan struct{}, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if r.Context().Err() != nil {
			cancelled <- struct{}{}
		}
	})
	srv := httptest.NewServer(withRequestTimeout(handler, clk, time.Minute))
	defer srv.Close()

	type result struct {
		code int
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, _, body, err := fetch(srv.Client(), http.MethodGet, srv.URL+"/apis/events.orch.io/v1/events")
		done <- result{code, body, err}
	}()
	<-h.entered
	clk.Add(59 * time.Second)
	select {
	case r := <-done:
		t.Fatalf("answered %d before the timeout", r.code)
	case <-time.After(50 * time.Millisecond):
	}
	clk.Add(time.Second)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	var status metav1.Status
	if err := json.Unmarshal([]byte(r.body), &status); err != nil {
		t.Fatalf("504 body %q: %v", r.body, err)
	}
	if r.code != http.StatusGatewayTimeout || status.Code != http.StatusGatewayTimeout || status.Reason != metav1.StatusReasonTimeout ||
		status.Message != "Timeout: request did not complete within requested timeout - context deadline exceeded" {
		t.Fatalf("timed out: %d %+v", r.code, status)
	}
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler's context was not cancelled")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/apis/events.orch.io/v1/events?watch=true", nil)
	go func() {
		if resp, err := srv.Client().Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-h.entered
	clk.Add(2 * time.Minute)
	select {
	case <-cancelled:
		t.Fatal("a watch was timed out")
	case <-time.After(50 * time.Millisecond):
	}
	close(h.release)
}

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
