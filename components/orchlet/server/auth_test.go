package server

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
	"orch.io/orch/components/authn"
)

func allowAll(authorizationv1.SubjectAccessReviewSpec) bool { return true }

func TestAuthentication(t *testing.T) {
	ca, stranger := newCA(t), newCA(t)
	tests := []struct {
		name       string
		anonymous  bool
		cert       *tls.Certificate
		token      string
		wantStatus int
		wantUser   string
		wantGroups []string
	}{
		{
			name: "anonymous on: no credential is system:anonymous", anonymous: true,
			wantStatus: 200, wantUser: authn.AnonymousUser, wantGroups: []string{authn.AllUnauthenticated},
		},
		{name: "anonymous off: no credential is 401", wantStatus: 401},
		{
			name: "client certificate: CN and organizations", cert: ca.clientCert(t, "alice", "dev", "ops"),
			wantStatus: 200, wantUser: "alice", wantGroups: []string{"dev", "ops", authn.AllAuthenticated},
		},
		{
			name: "client certificate with anonymous on is still the certificate's user", anonymous: true,
			cert: ca.clientCert(t, "system:node:node-2", "system:nodes"), wantStatus: 200,
			wantUser: "system:node:node-2", wantGroups: []string{"system:nodes", authn.AllAuthenticated},
		},
		{name: "certificate of another authority is 401, not anonymous", anonymous: true, cert: stranger.clientCert(t, "mallory"), wantStatus: 401},
		{
			name: "webhook token", token: "alice-token",
			wantStatus: 200, wantUser: "alice", wantGroups: []string{"admins", authn.AllAuthenticated},
		},
		{name: "token the webhook rejects is 401, not anonymous", anonymous: true, token: "wrong", wantStatus: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api, apiSrv := newFakeAPIServer(t, allowAll)
			cfg := testConfig()
			cfg.Authentication.Anonymous.Enabled = tt.anonymous
			cfg.Authentication.X509.ClientCAFile = writeFile(t, "ca.crt", ca.pem)
			cfg.Authentication.Webhook.Enabled = true
			cfg.Authorization.Mode = ModeWebhook
			deps := testDeps(t, newClock())
			deps.APIServer, deps.APIClient = apiSrv.URL, apiSrv.Client()
			s := start(t, cfg, deps)

			r := do(t, httpsClient(t, deps.CertDir, tt.cert), "GET", "https://"+s.Addrs().HTTPS+"/stats/summary", tt.token)
			if r.status != tt.wantStatus {
				t.Fatalf("status = %d %q, want %d", r.status, r.body, tt.wantStatus)
			}
			reviews := api.reviews()
			if tt.wantStatus == 401 {
				if r.body != "Unauthorized" || len(reviews) != 0 {
					t.Fatalf("401 body %q after %d reviews; want Unauthorized and no authorization", r.body, len(reviews))
				}
				return
			}
			if len(reviews) != 1 || reviews[0].User != tt.wantUser || !reflect.DeepEqual(reviews[0].Groups, tt.wantGroups) {
				t.Fatalf("authorized as %+v, want user %q groups %v", reviews, tt.wantUser, tt.wantGroups)
			}
		})
	}
}

func TestAuthorizationAttributes(t *testing.T) {
	tests := []struct {
		name        string
		method      string
		path        string
		fineGrained bool
		allow       []string // subresources the webhook allows
		wantAsked   []string // subresources asked, in order
		wantVerb    string
		wantStatus  int
		wantBody    string
	}{
		{name: "stats", method: "GET", path: "/stats/summary", allow: []string{"stats"}, wantAsked: []string{"stats"}, wantVerb: "get", wantStatus: 200},
		{name: "metrics", method: "GET", path: "/metrics", allow: []string{"metrics"}, wantAsked: []string{"metrics"}, wantVerb: "get", wantStatus: 200},
		{name: "logs", method: "GET", path: "/logs/syslog", allow: []string{"log"}, wantAsked: []string{"log"}, wantVerb: "get", wantStatus: 404},
		{name: "stats denied", method: "GET", path: "/stats/summary", allow: []string{"proxy"}, wantAsked: []string{"stats"}, wantVerb: "get", wantStatus: 403,
			wantBody: "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[stats])"},
		{name: "configz by its own subresource", method: "GET", path: "/configz", fineGrained: true, allow: []string{"configz"}, wantAsked: []string{"configz"}, wantVerb: "get", wantStatus: 200},
		{name: "configz falls back to proxy", method: "GET", path: "/configz", fineGrained: true, allow: []string{"proxy"}, wantAsked: []string{"configz", "proxy"}, wantVerb: "get", wantStatus: 200},
		{name: "configz without fine-grained authorization", method: "GET", path: "/configz", allow: []string{"configz"}, wantAsked: []string{"proxy"}, wantVerb: "get", wantStatus: 403,
			wantBody: "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[proxy])"},
		{name: "pods", method: "GET", path: "/pods", fineGrained: true, allow: []string{"pods"}, wantAsked: []string{"pods"}, wantVerb: "get", wantStatus: 200},
		{name: "pods denied", method: "GET", path: "/pods", fineGrained: true, wantAsked: []string{"pods", "proxy"}, wantVerb: "get", wantStatus: 403,
			wantBody: "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[pods proxy])"},
		{name: "healthz", method: "GET", path: "/healthz", fineGrained: true, allow: []string{"healthz"}, wantAsked: []string{"healthz"}, wantVerb: "get", wantStatus: 200},
		{name: "run is proxy, POST is create", method: "POST", path: "/run/default/web/nginx?cmd=ls", fineGrained: true, allow: []string{"proxy"}, wantAsked: []string{"proxy"}, wantVerb: "create", wantStatus: 200},
		// Anonymous requests reach exec and run only if the API server's authorization allows them.
		{name: "exec denied to anonymous", method: "POST", path: "/exec/default/web/nginx?command=echo&command=pwned&output=1", fineGrained: true, wantAsked: []string{"proxy"}, wantVerb: "create", wantStatus: 403,
			wantBody: "Forbidden (user=system:anonymous, verb=create, resource=nodes, subresource(s)=[proxy])"},
		{name: "run denied to anonymous", method: "POST", path: "/run/default/web/nginx?cmd=echo%20pwned", fineGrained: true, wantAsked: []string{"proxy"}, wantVerb: "create", wantStatus: 403,
			wantBody: "Forbidden (user=system:anonymous, verb=create, resource=nodes, subresource(s)=[proxy])"},
		{name: "container logs are proxy", method: "GET", path: "/containerLogs/default/web/nginx", fineGrained: true, allow: []string{"proxy"}, wantAsked: []string{"proxy"}, wantVerb: "get", wantStatus: 200},
		{name: "DELETE is delete", method: "DELETE", path: "/pods", fineGrained: true, allow: []string{"pods"}, wantAsked: []string{"pods"}, wantVerb: "delete", wantStatus: 405},
		{name: "unknown path is authorized as proxy before routing", method: "GET", path: "/nothing", fineGrained: true, wantAsked: []string{"proxy"}, wantVerb: "get", wantStatus: 403,
			wantBody: "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[proxy])"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api, apiSrv := newFakeAPIServer(t, func(spec authorizationv1.SubjectAccessReviewSpec) bool {
				return slices.Contains(tt.allow, spec.ResourceAttributes.Subresource)
			})
			cfg := testConfig()
			cfg.Authorization.Mode = ModeWebhook
			deps := testDeps(t, newClock())
			deps.Gates = gates(t, map[string]bool{fineGrainedGate: tt.fineGrained})
			deps.APIServer, deps.APIClient = apiSrv.URL, apiSrv.Client()
			s := start(t, cfg, deps)

			r := do(t, httpsClient(t, deps.CertDir, nil), tt.method, "https://"+s.Addrs().HTTPS+tt.path, "")
			if r.status != tt.wantStatus || (tt.wantBody != "" && r.body != tt.wantBody) {
				t.Errorf("%s %s = %d %q, want %d %q", tt.method, tt.path, r.status, r.body, tt.wantStatus, tt.wantBody)
			}
			var asked []string
			for _, spec := range api.reviews() {
				asked = append(asked, spec.ResourceAttributes.Subresource)
				want := authorizationv1.ResourceAttributes{Verb: tt.wantVerb, Version: "v1", Resource: "nodes", Subresource: spec.ResourceAttributes.Subresource, Name: nodeName}
				if *spec.ResourceAttributes != want || spec.NonResourceAttributes != nil {
					t.Errorf("review attributes = %+v, want %+v", *spec.ResourceAttributes, want)
				}
			}
			if !reflect.DeepEqual(asked, tt.wantAsked) {
				t.Errorf("subresources asked = %v, want %v", asked, tt.wantAsked)
			}
		})
	}
}

// TestWebhookCachesFromConfig checks that the servers use the configured cache TTLs: token answers
// for --authentication-token-webhook-cache-ttl, allowed and denied authorization answers for their
// own TTLs.
func TestWebhookCachesFromConfig(t *testing.T) {
	api, apiSrv := newFakeAPIServer(t, func(spec authorizationv1.SubjectAccessReviewSpec) bool { return spec.User == "alice" })
	cfg := testConfig()
	cfg.Authentication.Anonymous.Enabled = false
	cfg.Authentication.Webhook.Enabled = true
	cfg.Authentication.Webhook.CacheTTL = metav1.Duration{Duration: 2 * time.Minute}
	cfg.Authorization.Mode = ModeWebhook
	cfg.Authorization.Webhook.CacheAuthorizedTTL = metav1.Duration{Duration: 5 * time.Minute}
	cfg.Authorization.Webhook.CacheUnauthorizedTTL = metav1.Duration{Duration: 30 * time.Second}
	clk := newClock()
	deps := testDeps(t, clk)
	deps.APIServer, deps.APIClient = apiSrv.URL, apiSrv.Client()
	s := start(t, cfg, deps)
	client := httpsClient(t, deps.CertDir, nil)
	url := "https://" + s.Addrs().HTTPS + "/stats/summary"

	steps := []struct {
		at                     time.Duration // since the start
		aliceTokens, bobTokens int           // TokenReviews received so far
		reviews                int           // SubjectAccessReviews received so far
	}{
		{0, 1, 1, 2},
		{29 * time.Second, 1, 1, 2},            // everything cached
		{30 * time.Second, 1, 1, 3},            // bob's denial expired; alice's allowance kept
		{2*time.Minute - time.Second, 1, 1, 4}, // bob's denial of 0:30 expired at 1:00
		{2 * time.Minute, 2, 2, 4},             // tokens expired; both reviews still cached
		{5*time.Minute - time.Second, 3, 3, 5}, // tokens of 2:00 expired at 4:00; bob's denial of 1:59 too
		{5 * time.Minute, 3, 3, 6},             // alice's allowance of 0:00 expired
	}
	var now time.Duration
	for i, st := range steps {
		clk.Add(st.at - now)
		now = st.at
		if r := do(t, client, "GET", url, "alice-token"); r.status != 200 {
			t.Fatalf("step %d: alice = %d %q, want 200", i, r.status, r.body)
		}
		if r := do(t, client, "GET", url, "bob-token"); r.status != 403 {
			t.Fatalf("step %d: bob = %d %q, want 403", i, r.status, r.body)
		}
		got := []int{api.tokenCount("alice-token"), api.tokenCount("bob-token"), len(api.reviews())}
		if want := []int{st.aliceTokens, st.bobTokens, st.reviews}; !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d (%v): alice tokens, bob tokens, reviews = %v, want %v", i, st.at, got, want)
		}
	}
}

// TestWebhookFailures: a token webhook that cannot answer leaves the request unauthenticated
// (401); an authorization webhook that cannot answer is the kubelet's 500 "Authorization error".
func TestWebhookFailures(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	t.Cleanup(down.Close)
	tests := []struct {
		name       string
		token      string
		wantStatus int
		wantBody   string
	}{
		{"token webhook down", "alice-token", 401, "Unauthorized"},
		{"authorization webhook down", "", 500, "Authorization error (user=system:anonymous, verb=get, resource=nodes, subresource=stats)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Authentication.Webhook.Enabled = true
			cfg.Authorization.Mode = ModeWebhook
			deps := testDeps(t, newClock())
			deps.APIServer, deps.APIClient = down.URL, down.Client()
			s := start(t, cfg, deps)
			r := do(t, httpsClient(t, deps.CertDir, nil), "GET", "https://"+s.Addrs().HTTPS+"/stats/summary", tt.token)
			if r.status != tt.wantStatus || r.body != tt.wantBody {
				t.Fatalf("= %d %q, want %d %q", r.status, r.body, tt.wantStatus, tt.wantBody)
			}
		})
	}
}

// Without an API server (standalone mode) the webhooks have no one to ask: the server refuses to
// start and says what works instead, as Kubernetes' kubelet refuses webhook authentication
// without a client.
func TestWebhooksNeedAnAPIServer(t *testing.T) {
	tests := []struct {
		name   string
		set    func(*v1beta1.OrchletConfiguration)
		option string
	}{
		{"token webhook", func(c *v1beta1.OrchletConfiguration) { c.Authentication.Webhook.Enabled = true }, "--authentication-token-webhook"},
		{"authorization webhook", func(c *v1beta1.OrchletConfiguration) { c.Authorization.Mode = ModeWebhook }, "--authorization-mode=Webhook"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.set(cfg)
			_, err := New(cfg, testDeps(t, newClock()))
			if err == nil {
				t.Fatal("the server started with a webhook and no API server")
			}
			for _, want := range []string{tt.option, "--orchconfig", "--client-ca-file"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
		})
	}
}
