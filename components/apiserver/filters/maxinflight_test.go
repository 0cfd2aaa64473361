package filters

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"orch.io/orch/components/apiserver/endpoints"
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
	limits := WithMaxInFlightLimit(h, Limits{MaxRequestsInFlight: 1, MaxMutatingRequestsInFlight: 1}, prometheus.NewRegistry())
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

// A client that never finishes its body does not hold a place in flight: with the one mutating
// place taken by such a client, another's write is still served, and a body over the limit still
// reaches the handler's own refusal.
func TestBodiesAreReadBeforeTheirPlaceInFlight(t *testing.T) {
	got := make(chan string, 4)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- string(body)
		w.WriteHeader(http.StatusCreated)
	})
	limits := WithMaxInFlightLimit(handler, Limits{MaxRequestsInFlight: 1, MaxMutatingRequestsInFlight: 1}, prometheus.NewRegistry())
	srv := httptest.NewServer(asUser(limits, "alice", "system:authenticated"))
	t.Cleanup(srv.Close) // after sendRaw's connections are closed
	const events = "/apis/events.orch.io/v1/namespaces/default/events"
	for range 3 {
		sendRaw(t, srv, "POST "+events+" HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"partial\":")
	}
	time.Sleep(100 * time.Millisecond)
	resp, err := srv.Client().Post(srv.URL+events, "application/json", strings.NewReader(`{"whole":true}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || <-got != `{"whole":true}` {
		t.Fatalf("a whole body behind three unfinished ones: %d", resp.StatusCode)
	}
	big := strings.Repeat(" ", endpoints.MaxRequestBodyBytes+10)
	resp, err = srv.Client().Post(srv.URL+events, "application/json", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if body := <-got; len(body) != len(big) {
		t.Fatalf("the handler read %d bytes of a body of %d", len(body), len(big))
	}
}

// A body is read whole and byte for byte whatever its length, announced or not; a body announced
// large and sent short takes memory as its bytes arrive, not as announced.
func TestBodyBufferGrowsAsBytesArrive(t *testing.T) {
	f := newInFlight(Limits{MaxMutatingRequestsInFlight: 1}, prometheus.NewRegistry())
	for _, n := range []int{1, firstBodyBuffer - 1, firstBodyBuffer, firstBodyBuffer + 1, 100_000, endpoints.MaxRequestBodyBytes, endpoints.MaxRequestBodyBytes + 10} {
		for _, announced := range []bool{true, false} {
			body := bytes.Repeat([]byte("0123456789abcdef"), n/16+1)[:n]
			r := httptest.NewRequest(http.MethodPost, "/x", iotest.HalfReader(bytes.NewReader(body)))
			r.ContentLength = -1
			if announced {
				r.ContentLength = int64(n)
			}
			release, err := f.readBody(r)
			if err != nil {
				t.Fatalf("%d bytes (announced %v): %v", n, announced, err)
			}
			got, err := io.ReadAll(r.Body)
			release()
			if err != nil || !bytes.Equal(got, body) {
				t.Errorf("%d bytes (announced %v): read back %d bytes, %v", n, announced, len(got), err)
			}
		}
	}

	// 100 bytes of an announced megabyte, then the client stops (the request timeout ends the read).
	r := httptest.NewRequest(http.MethodPost, "/x", io.MultiReader(strings.NewReader(strings.Repeat(" ", 100)), iotest.ErrReader(io.ErrUnexpectedEOF)))
	r.ContentLength = 1_000_000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := f.readBody(r); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("a body ended early: %v", err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 256<<10 {
		t.Errorf("100 bytes of an announced megabyte took %d bytes", grew)
	}
}
