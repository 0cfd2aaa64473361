package authz

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	authorizationv1 "k8s.io/api/authorization/v1"

	"orch.io/orch/components/authn"
)

// sarServer is a SubjectAccessReview webhook: it allows user "alice", denies user "mallory",
// has no opinion on others, and records what it receives.
type sarServer struct {
	mu      sync.Mutex
	calls   map[string]int
	reviews []authorizationv1.SubjectAccessReview
	raw     []map[string]any
	fail    bool
}

func (s *sarServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var review authorizationv1.SubjectAccessReview
	var raw map[string]any
	if err != nil || json.Unmarshal(body, &review) != nil || json.Unmarshal(body, &raw) != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.calls[review.Spec.User]++
	s.reviews = append(s.reviews, review)
	s.raw = append(s.raw, raw)
	fail := s.fail
	s.mu.Unlock()
	if fail {
		http.Error(w, "down", http.StatusInternalServerError)
		return
	}
	switch review.Spec.User {
	case "alice":
		review.Status = authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "alice may"}
	case "mallory":
		review.Status = authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "mallory may not"}
	default:
		review.Status = authorizationv1.SubjectAccessReviewStatus{Reason: "no rule"}
	}
	json.NewEncoder(w).Encode(review)
}

func (s *sarServer) count(user string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[user]
}

func newSARServer(t *testing.T) (*sarServer, *httptest.Server) {
	s := &sarServer{calls: map[string]int{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func nodeStats(name string) Attributes {
	return Attributes{
		User: &authn.UserInfo{Name: name, UID: "uid-" + name, Groups: []string{"g1", "g2"}, Extra: map[string][]string{"k": {"v"}}},
		Verb: "get", APIVersion: "v1", Resource: "nodes", Subresource: "stats", Name: "node-1",
		Path: "/stats/summary", ResourceRequest: true,
	}
}

func TestSubjectAccessReviewWebhookDecisions(t *testing.T) {
	_, srv := newSARServer(t)
	w := SubjectAccessReviewWebhook(srv.Client(), srv.URL, clock.NewMock(), time.Minute, time.Second)
	tests := []struct {
		user       string
		want       Decision
		wantReason string
	}{
		{"alice", DecisionAllow, "alice may"},
		{"mallory", DecisionDeny, "mallory may not"},
		{"bob", DecisionNoOpinion, "no rule"},
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			d, reason, err := w.Authorize(context.Background(), nodeStats(tt.user))
			if err != nil || d != tt.want || reason != tt.wantReason {
				t.Fatalf("Authorize = %v, %q, %v; want %v, %q", d, reason, err, tt.want, tt.wantReason)
			}
		})
	}
}

func TestSubjectAccessReviewWebhookRequest(t *testing.T) {
	s, srv := newSARServer(t)
	w := SubjectAccessReviewWebhook(srv.Client(), srv.URL, clock.NewMock(), time.Minute, time.Minute)
	nonResource := Attributes{User: &authn.UserInfo{Name: "bob"}, Verb: "get", Path: "/healthz"}
	for _, a := range []Attributes{nodeStats("alice"), nonResource} {
		if _, _, err := w.Authorize(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if got := s.raw[0]; got["apiVersion"] != "authorization.orch.io/v1" || got["kind"] != "SubjectAccessReview" {
		t.Errorf("sent %v %v, want authorization.orch.io/v1 SubjectAccessReview", got["apiVersion"], got["kind"])
	}
	wantResource := authorizationv1.SubjectAccessReviewSpec{
		User: "alice", UID: "uid-alice", Groups: []string{"g1", "g2"},
		Extra: map[string]authorizationv1.ExtraValue{"k": {"v"}},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "get", Version: "v1", Resource: "nodes", Subresource: "stats", Name: "node-1",
		},
	}
	if !reflect.DeepEqual(s.reviews[0].Spec, wantResource) {
		t.Errorf("resource spec = %+v, want %+v", s.reviews[0].Spec, wantResource)
	}
	wantNonResource := authorizationv1.SubjectAccessReviewSpec{
		User: "bob", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"},
	}
	if !reflect.DeepEqual(s.reviews[1].Spec, wantNonResource) {
		t.Errorf("non-resource spec = %+v, want %+v", s.reviews[1].Spec, wantNonResource)
	}
}

func TestSubjectAccessReviewWebhookCache(t *testing.T) {
	const authorizedTTL, unauthorizedTTL = 5 * time.Minute, 30 * time.Second
	tests := []struct {
		user string
		ttl  time.Duration
	}{
		{"alice", authorizedTTL},     // allowed
		{"mallory", unauthorizedTTL}, // denied
		{"bob", unauthorizedTTL},     // no opinion counts as unauthorized
	}
	for _, tt := range tests {
		t.Run(tt.user, func(t *testing.T) {
			s, srv := newSARServer(t)
			clk := clock.NewMock()
			w := SubjectAccessReviewWebhook(srv.Client(), srv.URL, clk, authorizedTTL, unauthorizedTTL)
			steps := []struct {
				advance   time.Duration
				attrs     func(Attributes) Attributes
				wantCalls int
			}{
				{0, nil, 1},
				{tt.ttl - time.Second, nil, 1},
				{0, func(a Attributes) Attributes { a.Subresource = "metrics"; return a }, 2}, // another request is not the cached one
				{time.Second, nil, 3},
				{tt.ttl - time.Second, nil, 3},
			}
			for i, st := range steps {
				clk.Add(st.advance)
				a := nodeStats(tt.user)
				if st.attrs != nil {
					a = st.attrs(a)
				}
				if _, _, err := w.Authorize(context.Background(), a); err != nil {
					t.Fatal(err)
				}
				if got := s.count(tt.user); got != st.wantCalls {
					t.Fatalf("step %d: webhook called %d times, want %d", i, got, st.wantCalls)
				}
			}
		})
	}
}

func TestSubjectAccessReviewWebhookFailure(t *testing.T) {
	s, srv := newSARServer(t)
	w := SubjectAccessReviewWebhook(srv.Client(), srv.URL, clock.NewMock(), time.Hour, time.Hour)
	s.fail = true
	d, _, err := w.Authorize(context.Background(), nodeStats("alice"))
	if d != DecisionNoOpinion || err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("failed webhook: %v, %v; want NoOpinion and an error naming the status", d, err)
	}
	s.mu.Lock()
	s.fail = false
	s.mu.Unlock()
	if d, _, err := w.Authorize(context.Background(), nodeStats("alice")); d != DecisionAllow || err != nil {
		t.Fatalf("after recovery: %v, %v; want Allow (a failure must not be cached)", d, err)
	}
}
