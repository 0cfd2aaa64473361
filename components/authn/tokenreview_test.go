package authn

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	authenticationv1 "k8s.io/api/authentication/v1"
)

// reviewServer is a TokenReview webhook answering from a table of tokens and counting the reviews
// it receives per token.
type reviewServer struct {
	mu       sync.Mutex
	requests map[string]int
	bodies   []map[string]any
	answers  map[string]authenticationv1.TokenReviewStatus
	fail     bool
}

func (s *reviewServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var raw map[string]any
	var review authenticationv1.TokenReview
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if json.Unmarshal(body, &raw) != nil || json.Unmarshal(body, &review) != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.requests[review.Spec.Token]++
	s.bodies = append(s.bodies, raw)
	fail := s.fail
	s.mu.Unlock()
	if fail {
		http.Error(w, "webhook down", http.StatusServiceUnavailable)
		return
	}
	review.Status = s.answers[review.Spec.Token]
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(review)
}

func (s *reviewServer) count(token string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[token]
}

func newReviewServer(t *testing.T) (*reviewServer, *httptest.Server) {
	rs := &reviewServer{requests: map[string]int{}, answers: map[string]authenticationv1.TokenReviewStatus{
		"good": {Authenticated: true, User: authenticationv1.UserInfo{
			Username: "alice", UID: "u-1", Groups: []string{"dev"},
			Extra: map[string]authenticationv1.ExtraValue{"scopes": {"a", "b"}},
		}},
		"bad":      {Authenticated: false, Error: "token expired"},
		"bad-bare": {Authenticated: false},
	}}
	srv := httptest.NewServer(rs)
	t.Cleanup(srv.Close)
	return rs, srv
}

func TestTokenReviewWebhookAnswers(t *testing.T) {
	rs, srv := newReviewServer(t)
	a := TokenReviewWebhook(srv.Client(), srv.URL, clock.NewMock(), time.Minute)
	tests := []struct {
		name    string
		header  string
		want    *UserInfo
		wantErr string
	}{
		{name: "no token: no opinion"},
		{name: "basic auth: no opinion", header: "Basic YTpi"},
		{
			name: "authenticated", header: "Bearer good",
			want: &UserInfo{Name: "alice", UID: "u-1", Groups: []string{"dev", AllAuthenticated}, Extra: map[string][]string{"scopes": {"a", "b"}}},
		},
		{name: "rejected with the review's error", header: "Bearer bad", wantErr: "token expired"},
		{name: "rejected without error text", header: "Bearer bad-bare", wantErr: ErrInvalidToken.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := request(tt.header)
			user, ok, err := a.AuthenticateRequest(r)
			if tt.wantErr != "" {
				if err == nil || !errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want ErrInvalidToken containing %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if ok != (tt.want != nil) || (ok && !reflect.DeepEqual(user, tt.want)) {
				t.Fatalf("AuthenticateRequest = %+v, %v; want %+v", user, ok, tt.want)
			}
			if ok && r.Header.Get("Authorization") != "" {
				t.Error("Authorization header kept after successful authentication")
			}
		})
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	first := rs.bodies[0]
	if first["apiVersion"] != "authentication.orch.io/v1" || first["kind"] != "TokenReview" {
		t.Errorf("review sent as %v %v, want authentication.orch.io/v1 TokenReview", first["apiVersion"], first["kind"])
	}
	if spec, _ := first["spec"].(map[string]any); spec["token"] != "good" {
		t.Errorf("review spec = %v, want the token", first["spec"])
	}
}

func TestTokenReviewWebhookCache(t *testing.T) {
	const ttl = 2 * time.Minute
	tests := []struct {
		token  string
		wantOK bool
	}{
		{"good", true},
		{"bad", false},
	}
	for _, tt := range tests {
		t.Run(tt.token, func(t *testing.T) {
			rs, srv := newReviewServer(t)
			clk := clock.NewMock()
			a := TokenReviewWebhook(srv.Client(), srv.URL, clk, ttl)
			steps := []struct {
				advance   time.Duration
				wantCalls int
			}{
				{0, 1},                 // first request asks the webhook
				{ttl - time.Second, 1}, // within the TTL: answered from the cache
				{time.Second, 2},       // at the TTL: asked again
				{ttl / 2, 2},           // the new answer is cached in turn
			}
			for i, s := range steps {
				clk.Add(s.advance)
				_, ok, _ := a.AuthenticateRequest(request("Bearer " + tt.token))
				if ok != tt.wantOK {
					t.Fatalf("step %d: ok = %v, want %v", i, ok, tt.wantOK)
				}
				if got := rs.count(tt.token); got != s.wantCalls {
					t.Fatalf("step %d: webhook called %d times, want %d", i, got, s.wantCalls)
				}
			}
		})
	}
}

func TestTokenReviewWebhookFailureNotCached(t *testing.T) {
	rs, srv := newReviewServer(t)
	a := TokenReviewWebhook(srv.Client(), srv.URL, clock.NewMock(), time.Hour)
	rs.fail = true
	_, ok, err := a.AuthenticateRequest(request("Bearer good"))
	if ok || err == nil || errors.Is(err, ErrInvalidToken) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("failed webhook: ok=%v err=%v; want a call error naming the status", ok, err)
	}
	rs.mu.Lock()
	rs.fail = false
	rs.mu.Unlock()
	if _, ok, err := a.AuthenticateRequest(request("Bearer good")); !ok || err != nil {
		t.Fatalf("after recovery: ok=%v err=%v; want authenticated (failure must not be cached)", ok, err)
	}
	if got := rs.count("good"); got != 2 {
		t.Fatalf("webhook called %d times, want 2", got)
	}
}
