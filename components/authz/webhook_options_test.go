package authz

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/prometheus/client_golang/prometheus"
	authorizationv1 "k8s.io/api/authorization/v1"

	"orch.io/orch/components/authn"
	"orch.io/orch/components/authz/authztest"
)

// webhookFor builds a webhook authorizer reaching s through its kubeconfig file.
func webhookFor(t *testing.T, s *authztest.Server, o WebhookOptions) Authorizer {
	t.Helper()
	client, url, err := WebhookConnection(s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	o.Client, o.URL = client, url
	if o.Clock == nil {
		o.Clock = clock.NewMock()
	}
	if o.Version == "" {
		o.Version = "v1"
	}
	if o.Name == "" {
		o.Name = "policy"
	}
	a, err := NewWebhook(o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func eventsList(user string) Attributes {
	return Attributes{
		User: &authn.UserInfo{Name: user, UID: "uid-" + user, Groups: []string{"devs", "system:authenticated"}, Extra: map[string][]string{"example.com/team": {"blue", "green"}}},
		Verb: "list", Namespace: "default", APIGroup: "events.orch.io", APIVersion: "v1", Resource: "events",
		Path: "/apis/events.orch.io/v1/namespaces/default/events", ResourceRequest: true,
	}
}

// byUser allows alice, denies mallory, says both for confused and has no opinion on others.
var byUser = authztest.Decide(func(r authztest.Review) authorizationv1.SubjectAccessReviewStatus {
	switch r.Spec.User {
	case "alice":
		return authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "alice may"}
	case "mallory":
		return authorizationv1.SubjectAccessReviewStatus{Denied: true, Reason: "mallory may not"}
	case "confused":
		return authorizationv1.SubjectAccessReviewStatus{Allowed: true, Denied: true, Reason: "both"}
	}
	return authorizationv1.SubjectAccessReviewStatus{Reason: "no rule for " + r.Spec.User}
})

func TestWebhookAnswers(t *testing.T) {
	tests := []struct {
		user       string
		want       Decision
		wantReason string
		wantErr    string
	}{
		{"alice", DecisionAllow, "alice may", ""},
		{"mallory", DecisionDeny, "mallory may not", ""},
		{"bob", DecisionNoOpinion, "no rule for bob", ""},
		{"confused", DecisionDeny, "both", "returned both allow and deny response"},
	}
	for _, version := range []string{"v1", "v1beta1"} {
		for _, tt := range tests {
			t.Run(version+"/"+tt.user, func(t *testing.T) {
				s := authztest.NewServer(t, byUser)
				a := webhookFor(t, s, WebhookOptions{Version: version, DecisionOnError: DecisionNoOpinion})
				d, reason, err := a.Authorize(context.Background(), eventsList(tt.user))
				if d != tt.want || reason != tt.wantReason {
					t.Errorf("Authorize = %v, %q; want %v, %q", d, reason, tt.want, tt.wantReason)
				}
				if (err != nil) != (tt.wantErr != "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
					t.Errorf("error %v, want one containing %q", err, tt.wantErr)
				}
			})
		}
	}
}

// The review carries the user and the request in the version configured, to the kubeconfig's
// server path, with the kubeconfig's client certificate.
func TestWebhookReviewContent(t *testing.T) {
	wantResource := authorizationv1.SubjectAccessReviewSpec{
		User: "alice", UID: "uid-alice", Groups: []string{"devs", "system:authenticated"},
		Extra: map[string]authorizationv1.ExtraValue{"example.com/team": {"blue", "green"}},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: "default", Verb: "list", Group: "events.orch.io", Version: "v1", Resource: "events",
		},
	}
	wantNonResource := authorizationv1.SubjectAccessReviewSpec{
		User: "bob", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"},
	}
	for _, tt := range []struct{ version, apiVersion, groupsField string }{
		{"v1", "authorization.k8s.io/v1", "groups"},
		{"v1beta1", "authorization.k8s.io/v1beta1", "group"},
	} {
		t.Run(tt.version, func(t *testing.T) {
			s := authztest.NewServer(t, byUser)
			a := webhookFor(t, s, WebhookOptions{Version: tt.version, DecisionOnError: DecisionNoOpinion})
			for _, attrs := range []Attributes{eventsList("alice"), {User: &authn.UserInfo{Name: "bob"}, Verb: "get", Path: "/healthz"}} {
				if _, _, err := a.Authorize(context.Background(), attrs); err != nil {
					t.Fatal(err)
				}
			}
			reviews := s.Reviews()
			if len(reviews) != 2 {
				t.Fatalf("%d reviews, want 2", len(reviews))
			}
			for _, r := range reviews {
				if r.APIVersion != tt.apiVersion || r.Client != authztest.ClientName {
					t.Errorf("review %s from %q, want %s from %q", r.APIVersion, r.Client, tt.apiVersion, authztest.ClientName)
				}
			}
			if !reflect.DeepEqual(reviews[0].Spec, wantResource) {
				t.Errorf("resource review = %+v, want %+v", reviews[0].Spec, wantResource)
			}
			if _, ok := reviews[0].Raw["spec"].(map[string]any)[tt.groupsField]; !ok {
				t.Errorf("%s review has no %q field: %v", tt.version, tt.groupsField, reviews[0].Raw["spec"])
			}
			if !reflect.DeepEqual(reviews[1].Spec, wantNonResource) {
				t.Errorf("non-resource review = %+v, want %+v", reviews[1].Spec, wantNonResource)
			}
		})
	}
}

// slow answers nothing until the caller gives up; arrived receives each review as it comes.
func slow(arrived chan<- struct{}) authztest.Answer {
	return func(_ http.ResponseWriter, r *http.Request, _ authztest.Review) {
		arrived <- struct{}{}
		<-r.Context().Done()
	}
}

// Every way a call can fail answers the failure policy with an error, is not cached, and is
// counted under Kubernetes' result label; only NoOpinion counts as failing open.
func TestWebhookFailurePolicy(t *testing.T) {
	const timeout = 3 * time.Second
	tests := []struct {
		name       string
		answer     authztest.Answer
		down, slow bool
		wantResult string
		wantErr    string
	}{
		{name: "down", down: true, wantResult: "error", wantErr: "connection refused"},
		{name: "server error", answer: func(w http.ResponseWriter, _ *http.Request, _ authztest.Review) {
			http.Error(w, "policy engine exploded", http.StatusInternalServerError)
		}, wantResult: "error", wantErr: "500 Internal Server Error: policy engine exploded"},
		{name: "gateway timeout", answer: func(w http.ResponseWriter, _ *http.Request, _ authztest.Review) {
			http.Error(w, "upstream slow", http.StatusGatewayTimeout)
		}, wantResult: "timeout", wantErr: "504"},
		{name: "malformed JSON", answer: func(w http.ResponseWriter, _ *http.Request, _ authztest.Review) {
			_, _ = w.Write([]byte(`{"status": {"allowed": tru`))
		}, wantResult: "error", wantErr: "malformed answer"},
		{name: "wrong field type", answer: func(w http.ResponseWriter, _ *http.Request, _ authztest.Review) {
			_, _ = w.Write([]byte(`{"status": {"allowed": "yes"}}`))
		}, wantResult: "error", wantErr: "malformed answer"},
		{name: "wrong kind", answer: func(w http.ResponseWriter, _ *http.Request, _ authztest.Review) {
			_, _ = w.Write([]byte(`{"apiVersion": "v1", "kind": "Status", "status": "Success"}`))
		}, wantResult: "error", wantErr: `got "v1" "Status", want authorization.k8s.io/v1 SubjectAccessReview`},
		{name: "slow past the timeout", slow: true, wantResult: "timeout", wantErr: "timed out after 3s"},
	}
	for _, policy := range []Decision{DecisionNoOpinion, DecisionDeny} {
		for _, tt := range tests {
			t.Run(policy.String()+"/"+tt.name, func(t *testing.T) {
				arrived := make(chan struct{}, 1)
				answer := tt.answer
				if tt.slow {
					answer = slow(arrived)
				}
				s := authztest.NewServer(t, answer)
				clk := clock.NewMock()
				reg := prometheus.NewRegistry()
				a := webhookFor(t, s, WebhookOptions{Clock: clk, Timeout: timeout, DecisionOnError: policy,
					AuthorizedTTL: time.Hour, UnauthorizedTTL: time.Hour, Metrics: NewMetrics(reg)})
				if tt.down {
					s.Close()
				}
				type result struct {
					d      Decision
					reason string
					err    error
				}
				done := make(chan result, 1)
				go func() {
					d, reason, err := a.Authorize(context.Background(), eventsList("alice"))
					done <- result{d, reason, err}
				}()
				if tt.slow {
					<-arrived
					clk.Add(timeout - time.Millisecond)
					select {
					case r := <-done:
						t.Fatalf("gave up before the timeout: %v, %v", r.d, r.err)
					case <-time.After(50 * time.Millisecond):
					}
					clk.Add(time.Millisecond)
				}
				var got result
				select {
				case got = <-done:
				case <-time.After(30 * time.Second):
					t.Fatal("Authorize did not return")
				}
				if got.d != policy || got.reason != "" || got.err == nil || !strings.Contains(got.err.Error(), tt.wantErr) {
					t.Fatalf("Authorize = %v, %q, %v; want %v and an error containing %q", got.d, got.reason, got.err, policy, tt.wantErr)
				}
				if !strings.Contains(got.err.Error(), `authorization webhook "policy"`) {
					t.Errorf("error %q does not name the authorizer", got.err)
				}
				labels := map[string]string{"name": "policy", "result": tt.wantResult}
				if n := authztest.Metric(t, reg, "apiserver_authorization_webhook_evaluations_total", labels); n != 1 {
					t.Errorf("webhook_evaluations_total%v = %v, want 1", labels, n)
				}
				if n := authztest.Metric(t, reg, "apiserver_authorization_webhook_duration_seconds", labels); n != 1 {
					t.Errorf("webhook_duration_seconds%v observed %v times, want 1", labels, n)
				}
				wantFailOpen := 0.0
				if policy == DecisionNoOpinion {
					wantFailOpen = 1
				}
				if n := authztest.Metric(t, reg, "apiserver_authorization_webhook_evaluations_fail_open_total", labels); n != wantFailOpen {
					t.Errorf("webhook_evaluations_fail_open_total%v = %v, want %v", labels, n, wantFailOpen)
				}
				if tt.down {
					return
				}
				// A failure is not cached: the next request is asked again and its answer used.
				calls := s.Calls()
				s.SetAnswer(byUser)
				if d, _, err := a.Authorize(context.Background(), eventsList("alice")); d != DecisionAllow || err != nil {
					t.Errorf("after the webhook recovered: %v, %v; want Allow", d, err)
				}
				if s.Calls() != calls+1 {
					t.Errorf("webhook called %d times after recovering, want 1", s.Calls()-calls)
				}
			})
		}
	}
}

// A request whose caller went away is counted as canceled and does not count as failing open.
func TestWebhookCanceled(t *testing.T) {
	arrived := make(chan struct{}, 1)
	s := authztest.NewServer(t, slow(arrived))
	reg := prometheus.NewRegistry()
	a := webhookFor(t, s, WebhookOptions{Timeout: 30 * time.Second, DecisionOnError: DecisionNoOpinion, Metrics: NewMetrics(reg)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := a.Authorize(ctx, eventsList("alice"))
		done <- err
	}()
	<-arrived
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	labels := map[string]string{"name": "policy", "result": "canceled"}
	if n := authztest.Metric(t, reg, "apiserver_authorization_webhook_evaluations_total", labels); n != 1 {
		t.Errorf("canceled evaluations = %v, want 1", n)
	}
	if n := authztest.Metric(t, reg, "apiserver_authorization_webhook_evaluations_fail_open_total", labels); n != 0 {
		t.Errorf("canceled call counted as failing open")
	}
}

// Answers are cached on the injected clock, until their TTL has elapsed: allowed ones for
// authorizedTTL, others for unauthorizedTTL, none when the TTL is zero (caching turned off); a call
// proves a miss.
func TestWebhookCacheTTL(t *testing.T) {
	const authorizedTTL, unauthorizedTTL = 5 * time.Minute, 30 * time.Second
	tests := []struct {
		name       string
		user       string
		authorized time.Duration
		unauth     time.Duration
		ttl        time.Duration // 0: not cached
	}{
		{"allowed", "alice", authorizedTTL, unauthorizedTTL, authorizedTTL},
		{"denied", "mallory", authorizedTTL, unauthorizedTTL, unauthorizedTTL},
		{"no opinion", "bob", authorizedTTL, unauthorizedTTL, unauthorizedTTL},
		{"allowed, cacheAuthorizedRequests false", "alice", 0, unauthorizedTTL, 0},
		{"denied, cacheUnauthorizedRequests false", "mallory", authorizedTTL, 0, 0},
		{"allowed still cached when unauthorized are not", "alice", authorizedTTL, 0, authorizedTTL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := authztest.NewServer(t, byUser)
			clk := clock.NewMock()
			a := webhookFor(t, s, WebhookOptions{Clock: clk, AuthorizedTTL: tt.authorized, UnauthorizedTTL: tt.unauth, DecisionOnError: DecisionNoOpinion})
			ask := func(attrs Attributes) {
				t.Helper()
				if _, _, err := a.Authorize(context.Background(), attrs); err != nil {
					t.Fatal(err)
				}
			}
			expectCalls := func(step string, want int) {
				t.Helper()
				if got := s.Calls(); got != want {
					t.Fatalf("%s: webhook called %d times, want %d", step, got, want)
				}
			}
			ask(eventsList(tt.user))
			expectCalls("first request", 1)
			ask(eventsList(tt.user))
			if tt.ttl == 0 {
				expectCalls("same request, caching off", 2)
				return
			}
			expectCalls("same request", 1)
			other := eventsList(tt.user)
			other.Namespace = "kube-system"
			ask(other)
			expectCalls("another namespace", 2)
			clk.Add(tt.ttl - time.Nanosecond)
			ask(eventsList(tt.user))
			expectCalls("just before the TTL", 2)
			clk.Add(time.Nanosecond)
			ask(eventsList(tt.user))
			expectCalls("at the TTL", 3)
			ask(eventsList(tt.user))
			expectCalls("cached again", 3)
		})
	}
}

// Requests with huge requester-controlled attributes are never cached, so they cannot fill it.
func TestWebhookDoesNotCacheHugeRequests(t *testing.T) {
	s := authztest.NewServer(t, byUser)
	a := webhookFor(t, s, WebhookOptions{AuthorizedTTL: time.Hour, UnauthorizedTTL: time.Hour, DecisionOnError: DecisionNoOpinion})
	huge := eventsList("alice")
	huge.Name = strings.Repeat("n", maxControlledAttrCacheSize)
	for range 2 {
		if _, _, err := a.Authorize(context.Background(), huge); err != nil {
			t.Fatal(err)
		}
	}
	if s.Calls() != 2 {
		t.Errorf("webhook called %d times for two huge requests, want 2", s.Calls())
	}
}

// matchResult is a MatchConditions with a fixed outcome.
type matchResult struct {
	excluded bool
	err      error
}

func (m matchResult) Match(context.Context, *authorizationv1.SubjectAccessReviewSpec) (bool, error) {
	return m.excluded, m.err
}

// Match conditions gate the call with Kubernetes' logic; the outcome is counted per authorizer.
func TestWebhookMatchConditions(t *testing.T) {
	errEval := errors.New("no such key: resourceAttributes")
	tests := []struct {
		name          string
		match         matchResult
		policy        Decision
		want          Decision
		wantErr       bool
		wantCall      bool
		wantExclusion float64
		wantErrors    float64
	}{
		{"all true calls", matchResult{}, DecisionDeny, DecisionAllow, false, true, 0, 0},
		{"one false skips", matchResult{excluded: true}, DecisionDeny, DecisionNoOpinion, false, false, 1, 0},
		{"error, policy NoOpinion", matchResult{err: errEval}, DecisionNoOpinion, DecisionNoOpinion, true, false, 0, 1},
		{"error, policy Deny", matchResult{err: errEval}, DecisionDeny, DecisionDeny, true, false, 0, 1},
		{"error then false skips", matchResult{excluded: true, err: errEval}, DecisionDeny, DecisionNoOpinion, false, false, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := authztest.NewServer(t, byUser)
			reg := prometheus.NewRegistry()
			a := webhookFor(t, s, WebhookOptions{DecisionOnError: tt.policy, MatchConditions: tt.match, Metrics: NewMetrics(reg)})
			d, reason, err := a.Authorize(context.Background(), eventsList("alice"))
			if d != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("Authorize = %v, %q, %v; want %v, error %v", d, reason, err, tt.want, tt.wantErr)
			}
			if tt.wantErr && !errors.Is(err, errEval) {
				t.Errorf("error %v does not carry the evaluation error", err)
			}
			if called := s.Calls() == 1; called != tt.wantCall {
				t.Errorf("webhook called: %v, want %v", called, tt.wantCall)
			}
			labels := map[string]string{"type": "Webhook", "name": "policy"}
			for metric, want := range map[string]float64{
				"apiserver_authorization_match_condition_exclusions_total":        tt.wantExclusion,
				"apiserver_authorization_match_condition_evaluation_errors_total": tt.wantErrors,
				"apiserver_authorization_match_condition_evaluation_seconds":      1,
			} {
				if got := authztest.Metric(t, reg, metric, labels); got != want {
					t.Errorf("%s = %v, want %v", metric, got, want)
				}
			}
		})
	}
}

func TestNewWebhookRefuses(t *testing.T) {
	good := WebhookOptions{Client: http.DefaultClient, URL: "https://x", Clock: clock.NewMock(), Version: "v1", DecisionOnError: DecisionNoOpinion}
	tests := []struct {
		name    string
		change  func(*WebhookOptions)
		wantErr string
	}{
		{"version", func(o *WebhookOptions) { o.Version = "v2" }, `unsupported SubjectAccessReview version "v2"`},
		{"decision on error", func(o *WebhookOptions) { o.DecisionOnError = DecisionAllow }, "must be NoOpinion or Deny, not Allow"},
		{"client", func(o *WebhookOptions) { o.Client = nil }, "a client and a clock are required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := good
			tt.change(&o)
			if _, err := NewWebhook(o); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("NewWebhook: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
	if _, err := NewWebhook(good); err != nil {
		t.Errorf("NewWebhook(valid): %v", err)
	}
}

func TestWebhookConnectionErrors(t *testing.T) {
	if _, _, err := WebhookConnection("/nonexistent/webhook.kubeconfig"); err == nil || !strings.Contains(err.Error(), "/nonexistent/webhook.kubeconfig") {
		t.Errorf("missing kubeconfig: %v, want an error naming it", err)
	}
	// The server's certificate is verified with the kubeconfig's CA, not the system's roots.
	s := authztest.NewServer(t, byUser)
	other := authztest.NewServer(t, byUser)
	client, _, err := WebhookConnection(other.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewWebhook(WebhookOptions{Name: "policy", Client: client, URL: s.URL, Clock: clock.NewMock(), Version: "v1", DecisionOnError: DecisionDeny})
	if err != nil {
		t.Fatal(err)
	}
	if d, _, err := a.Authorize(context.Background(), eventsList("alice")); d != DecisionDeny || err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("server with another CA: %v, %v; want Deny and a certificate error", d, err)
	}
	if s.Calls() != 0 {
		t.Error("the review reached a server the kubeconfig does not trust")
	}
}

func TestInstrumented(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	next := DecisionAllow
	a := Instrumented("Webhook", "policy", AuthorizerFunc(func(context.Context, Attributes) (Decision, string, error) {
		return next, "", nil
	}), m)
	for _, d := range []Decision{DecisionAllow, DecisionAllow, DecisionDeny, DecisionNoOpinion} {
		next = d
		if got, _, _ := a.Authorize(context.Background(), Attributes{}); got != d {
			t.Fatalf("Instrumented changed %v into %v", d, got)
		}
	}
	for decision, want := range map[string]float64{"allowed": 2, "denied": 1, "NoOpinion": 0} {
		labels := map[string]string{"type": "Webhook", "name": "policy", "decision": decision}
		if got := authztest.Metric(t, reg, "apiserver_authorization_decisions_total", labels); got != want {
			t.Errorf("decisions_total%v = %v, want %v", labels, got, want)
		}
	}
}
