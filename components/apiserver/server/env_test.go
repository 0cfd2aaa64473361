package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	eventsv1 "orch.io/orch/components/apis/events/v1"
	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/apiserver/storage/memory"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz"
)

// start is the simulated time every test begins at.
var start = time.Date(2026, 11, 21, 23, 0, 0, 0, time.UTC)

// env is a real HTTPS server over memory storage on a mock clock.
type env struct {
	t      *testing.T
	url    string
	client *http.Client
	clock  *clock.Mock
	store  storage.Interface
}

func newEnv(t *testing.T, tune ...func(*Config)) *env {
	t.Helper()
	srv, clk, st := startServer(t, tune...)
	return &env{t: t, url: srv.URL, client: srv.Client(), clock: clk, store: st}
}

// startServer serves the API over memory storage on a mock clock, until the test ends.
func startServer(t testing.TB, tune ...func(*Config)) (*httptest.Server, *clock.Mock, storage.Interface) {
	t.Helper()
	clk := clock.NewMock()
	clk.Set(start)
	st := memory.New(clk)
	cfg := Config{
		Clock:             clk,
		Storage:           st,
		EventTTL:          time.Hour,
		Authenticator:     authn.Union(authn.Anonymous()),
		Authorizer:        authz.AlwaysAllow(),
		MinRequestTimeout: 30 * time.Minute,
		BookmarkInterval:  time.Minute,
	}
	for _, f := range tune {
		f(&cfg)
	}
	h, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { _ = st.Close() })
	return srv, clk, st
}

type response struct {
	code   int
	header http.Header
	body   []byte
}

// do sends a request; body may be nil, a []byte, a string, or a value encoded as JSON.
func (e *env) do(method, path string, body any, header ...string) response {
	e.t.Helper()
	var reader io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		reader = bytes.NewReader(b)
	case string:
		reader = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.url+path, reader)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: data}
}

func (r response) event(t *testing.T) *eventsv1.Event {
	t.Helper()
	e := &eventsv1.Event{}
	if err := json.Unmarshal(r.body, e); err != nil {
		t.Fatalf("decoding Event from %d %s: %v", r.code, r.body, err)
	}
	return e
}

func (r response) list(t *testing.T) *eventsv1.EventList {
	t.Helper()
	l := &eventsv1.EventList{}
	if err := json.Unmarshal(r.body, l); err != nil {
		t.Fatalf("decoding EventList from %d %s: %v", r.code, r.body, err)
	}
	return l
}

func (r response) status(t *testing.T) *metav1.Status {
	t.Helper()
	s := &metav1.Status{}
	if err := json.Unmarshal(r.body, s); err != nil {
		t.Fatalf("decoding Status from %d %s: %v", r.code, r.body, err)
	}
	if s.Kind != "Status" || s.APIVersion != "v1" {
		t.Fatalf("body is not a v1 Status: %s", r.body)
	}
	return s
}

// expectStatus asserts a Failure Status with code and reason, as every error must be.
func (r response) expectStatus(t *testing.T, code int, reason metav1.StatusReason) *metav1.Status {
	t.Helper()
	if r.code != code {
		t.Fatalf("code = %d, want %d; body %s", r.code, code, r.body)
	}
	s := r.status(t)
	if s.Status != metav1.StatusFailure || s.Code != int32(code) || s.Reason != reason || s.Message == "" {
		t.Fatalf("Status = %+v, want Failure %d %s with a message", s, code, reason)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type = %q, want application/json", ct)
	}
	return s
}

const eventsPath = "/apis/events.orch.io/v1/namespaces/default/events"

// sample is a valid event as a client sends it.
func sample(name string) map[string]any {
	return map[string]any{
		"apiVersion":          "events.orch.io/v1",
		"kind":                "Event",
		"metadata":            map[string]any{"name": name, "labels": map[string]any{"app": "web"}},
		"eventTime":           "2026-11-21T23:03:57.523342Z",
		"reportingController": "peers.io/capture",
		"reportingInstance":   "capture-1",
		"action":              "Started",
		"reason":              "Pulled",
		"regarding":           map[string]any{"kind": "Pod", "namespace": "default", "name": "web-0", "uid": "11111111-2222-3333-4444-555555555555", "apiVersion": "v1"},
		"note":                "sample event " + name,
		"type":                "Normal",
	}
}

func (e *env) create(name string) *eventsv1.Event {
	e.t.Helper()
	r := e.do("POST", eventsPath, sample(name))
	if r.code != http.StatusCreated {
		e.t.Fatalf("create %s: %d %s", name, r.code, r.body)
	}
	return r.event(e.t)
}
