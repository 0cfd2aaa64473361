package server

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"

	"orch.io/orch/components/apis/orchlet/v1beta1"
)

func TestServersEnabledByOptions(t *testing.T) {
	tests := []struct {
		name      string
		configure func(*v1beta1.OrchletConfiguration)
		wantAsked []string // configured addresses listened on, in order: HTTPS, read-only, healthz
	}{
		{
			name:      "defaults",
			wantAsked: []string{"127.0.0.1:10250", "127.0.0.1:10255", "127.0.0.1:10248"},
		},
		{
			name: "configured addresses and ports",
			configure: func(c *v1beta1.OrchletConfiguration) {
				c.Address, c.Port, c.ReadOnlyPort = "::1", 11250, 11255
				c.HealthzBindAddress, c.HealthzPort = "0.0.0.0", 11248
			},
			wantAsked: []string{"[::1]:11250", "[::1]:11255", "0.0.0.0:11248"},
		},
		{
			name:      "read-only port 0 disables the read-only server",
			configure: func(c *v1beta1.OrchletConfiguration) { c.ReadOnlyPort = 0 },
			wantAsked: []string{"127.0.0.1:10250", "127.0.0.1:10248"},
		},
		{
			name:      "healthz port 0 disables the health server",
			configure: func(c *v1beta1.OrchletConfiguration) { c.HealthzPort = 0 },
			wantAsked: []string{"127.0.0.1:10250", "127.0.0.1:10255"},
		},
		{
			name:      "--enable-server=false leaves the others",
			configure: func(c *v1beta1.OrchletConfiguration) { c.EnableServer = false },
			wantAsked: []string{"127.0.0.1:10255", "127.0.0.1:10248"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			if tt.configure != nil {
				tt.configure(cfg)
			}
			var asked []string
			deps := testDeps(t, newClock())
			deps.Listen = loopback(&asked)
			s := start(t, cfg, deps)
			if !reflect.DeepEqual(asked, tt.wantAsked) {
				t.Fatalf("listened on %v, want %v", asked, tt.wantAsked)
			}
			addrs := s.Addrs()
			enabled := map[string]bool{
				"https":     addrs.HTTPS != "",
				"read-only": addrs.ReadOnly != "",
				"healthz":   addrs.Healthz != "",
			}
			want := map[string]bool{"https": cfg.EnableServer, "read-only": cfg.ReadOnlyPort > 0, "healthz": cfg.HealthzPort > 0}
			if !reflect.DeepEqual(enabled, want) {
				t.Fatalf("servers enabled = %v, want %v (addresses %+v)", enabled, want, addrs)
			}
			if addrs.Healthz != "" {
				if r := do(t, http.DefaultClient, "GET", "http://"+addrs.Healthz+"/healthz", ""); r.status != 200 || r.body != "ok" {
					t.Errorf("healthz = %d %q, want 200 ok", r.status, r.body)
				}
			}
		})
	}
}

func TestHealthzServerServesOnlyHealthz(t *testing.T) {
	s := start(t, testConfig(), testDeps(t, newClock()))
	base := "http://" + s.Addrs().Healthz
	for path, want := range map[string]int{"/healthz": 200, "/pods": 404, "/metrics": 404, "/stats/summary": 404} {
		if r := do(t, http.DefaultClient, "GET", base+path, ""); r.status != want {
			t.Errorf("GET %s on the health server = %d, want %d", path, r.status, want)
		}
	}
}

// TestReadOnlyServerNeedsNoAuth denies everything on the HTTPS server (anonymous off, a webhook
// allowing nothing) and checks that the read-only server answers anyway without asking the webhook.
func TestReadOnlyServerNeedsNoAuth(t *testing.T) {
	api, apiSrv := newFakeAPIServer(t, func(authorizationv1.SubjectAccessReviewSpec) bool { return false })
	cfg := testConfig()
	cfg.Authentication.Anonymous.Enabled = false
	cfg.Authorization.Mode = ModeWebhook
	deps := testDeps(t, newClock())
	deps.APIServer, deps.APIClient = apiSrv.URL, apiSrv.Client()
	s := start(t, cfg, deps)

	for _, path := range []string{"/healthz", "/pods", "/stats/summary", "/metrics"} {
		if r := do(t, http.DefaultClient, "GET", "http://"+s.Addrs().ReadOnly+path, ""); r.status != 200 {
			t.Errorf("read-only GET %s = %d %q, want 200", path, r.status, r.body)
		}
		if r := do(t, httpsClient(t, deps.CertDir, nil), "GET", "https://"+s.Addrs().HTTPS+path, ""); r.status != 401 {
			t.Errorf("HTTPS GET %s = %d, want 401", path, r.status)
		}
	}
	if n := len(api.reviews()); n != 0 {
		t.Errorf("webhook asked %d times, want 0", n)
	}
}

func TestPaths(t *testing.T) {
	cfg := testConfig()
	deps := testDeps(t, newClock())
	s := start(t, cfg, deps)
	https := httpsClient(t, deps.CertDir, nil)

	servers := []struct {
		name   string
		client *http.Client
		base   string
	}{
		{"https", https, "https://" + s.Addrs().HTTPS},
		{"read-only", http.DefaultClient, "http://" + s.Addrs().ReadOnly},
	}
	for _, srv := range servers {
		t.Run(srv.name, func(t *testing.T) {
			r := do(t, srv.client, "GET", srv.base+"/healthz", "")
			if r.status != 200 || r.body != "ok" {
				t.Errorf("/healthz = %d %q, want 200 ok", r.status, r.body)
			}

			r = do(t, srv.client, "GET", srv.base+"/pods", "")
			var list corev1.PodList
			if err := json.Unmarshal([]byte(r.body), &list); err != nil || r.status != 200 {
				t.Fatalf("/pods = %d %q: %v", r.status, r.body, err)
			}
			if list.Kind != "PodList" || list.APIVersion != "v1" || !reflect.DeepEqual(list.Items, []corev1.Pod(testPods())) {
				t.Errorf("/pods = %+v, want a v1 PodList of the lister's pods", list)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("/pods Content-Type = %q", ct)
			}

			r = do(t, srv.client, "GET", srv.base+"/stats/summary", "")
			var summary Summary
			if err := json.Unmarshal([]byte(r.body), &summary); err != nil || r.status != 200 {
				t.Fatalf("/stats/summary = %d %q: %v", r.status, r.body, err)
			}
			if got, want := mustJSON(t, summary), mustJSON(t, testSummary()); got != want {
				t.Errorf("/stats/summary = %s, want %s", got, want)
			}
			for _, field := range []string{`"nodeName":"node-1"`, `"podRef":{"name":"web","namespace":"default","uid":"uid-web"}`, `"usageNanoCores":250000000`, `"workingSetBytes":536870912`} {
				if !strings.Contains(r.body, field) {
					t.Errorf("/stats/summary body lacks %s: %s", field, r.body)
				}
			}

			r = do(t, srv.client, "GET", srv.base+"/metrics", "")
			if r.status != 200 || !strings.Contains(r.body, "orchlet_test_total 3") {
				t.Errorf("/metrics = %d, body lacks orchlet_test_total 3:\n%s", r.status, r.body)
			}

			r = do(t, srv.client, "GET", srv.base+"/configz", "")
			if srv.name == "read-only" {
				if r.status != 404 {
					t.Errorf("read-only /configz = %d, want 404", r.status)
				}
				return
			}
			var configz map[string]map[string]int
			if err := json.Unmarshal([]byte(r.body), &configz); err != nil || r.status != 200 {
				t.Fatalf("/configz = %d %q: %v", r.status, r.body, err)
			}
			if want := map[string]map[string]int{"orchletconfig": {"maxPods": 110}}; !reflect.DeepEqual(configz, want) {
				t.Errorf("/configz = %v, want %v", configz, want)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	tests := []struct {
		name      string
		configure func(*v1beta1.OrchletConfiguration, *Deps)
		want      []string
	}{
		{
			name: "missing dependencies, all named",
			configure: func(_ *v1beta1.OrchletConfiguration, d *Deps) {
				d.Pods, d.Stats, d.NodeName, d.Gates = nil, nil, "", nil
			},
			want: []string{"Deps.Pods", "Deps.Stats", "Deps.NodeName", "Deps.Gates"},
		},
		{
			name:      "debugging handlers without Logs and Streams",
			configure: func(_ *v1beta1.OrchletConfiguration, d *Deps) { d.Logs, d.Streams = nil, nil },
			want:      []string{"Deps.Logs", "Deps.Streams"},
		},
		{
			name:      "unknown authorization mode",
			configure: func(c *v1beta1.OrchletConfiguration, _ *Deps) { c.Authorization.Mode = "RBAC" },
			want:      []string{"--authorization-mode", `"RBAC"`, "AlwaysAllow, Webhook"},
		},
		{
			name:      "authorization webhook without an API server",
			configure: func(c *v1beta1.OrchletConfiguration, _ *Deps) { c.Authorization.Mode = ModeWebhook },
			want:      []string{"--authorization-mode=Webhook", "API server"},
		},
		{
			name:      "token webhook without an API server",
			configure: func(c *v1beta1.OrchletConfiguration, _ *Deps) { c.Authentication.Webhook.Enabled = true },
			want:      []string{"--authentication-token-webhook", "API server"},
		},
		{
			name: "unreadable client CA file",
			configure: func(c *v1beta1.OrchletConfiguration, _ *Deps) {
				c.Authentication.X509.ClientCAFile = "/nonexistent/ca.crt"
			},
			want: []string{"--client-ca-file", "/nonexistent/ca.crt"},
		},
		{
			name: "client CA file without certificates",
			configure: func(c *v1beta1.OrchletConfiguration, _ *Deps) {
				c.Authentication.X509.ClientCAFile = writeFile(t, "ca.crt", []byte("not a certificate"))
			},
			want: []string{"--client-ca-file", "no PEM certificate"},
		},
		{
			name:      "unknown TLS version",
			configure: func(c *v1beta1.OrchletConfiguration, _ *Deps) { c.TLSMinVersion = "VersionTLS14" },
			want:      []string{"--tls-min-version", "VersionTLS14"},
		},
		{
			name:      "unknown cipher suite",
			configure: func(c *v1beta1.OrchletConfiguration, _ *Deps) { c.TLSCipherSuites = []string{"TLS_NOPE"} },
			want:      []string{"--tls-cipher-suites", "TLS_NOPE"},
		},
		{
			name: "cipher suites HTTP/2 cannot use",
			configure: func(c *v1beta1.OrchletConfiguration, _ *Deps) {
				c.TLSCipherSuites = []string{"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"}
			},
			want: []string{"--tls-cipher-suites must include", "HTTP/2"},
		},
		{
			name:      "certificate without key",
			configure: func(c *v1beta1.OrchletConfiguration, _ *Deps) { c.TLSCertFile = "/x/orchlet.crt" },
			want:      []string{"--tls-cert-file", "--tls-private-key-file"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			deps := testDeps(t, newClock())
			tt.configure(cfg, &deps)
			s, err := New(cfg, deps)
			if err == nil {
				t.Fatalf("New = %v, want an error", s)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestStartReportsBusyAddress(t *testing.T) {
	cfg := testConfig()
	first := start(t, cfg, testDeps(t, newClock()))
	cfg.Port = int32(portOf(t, first.Addrs().HTTPS))
	cfg.ReadOnlyPort, cfg.HealthzPort = 0, 0
	deps := testDeps(t, newClock())
	deps.Listen = nil // the configured address, already taken
	s, err := New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err == nil || !strings.Contains(err.Error(), "https server") {
		s.Close()
		t.Fatalf("Start on a busy port = %v, want an error naming the https server", err)
	}
}

func portOf(t *testing.T, hostport string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(hostport)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestStopping(t *testing.T) {
	tests := []struct {
		name string
		stop func(t *testing.T, s *Servers)
	}{
		{"Shutdown", func(t *testing.T, s *Servers) {
			if err := s.Shutdown(context.Background()); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
		}},
		{"Close", func(t *testing.T, s *Servers) {
			if err := s.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := start(t, testConfig(), testDeps(t, newClock()))
			addr := s.Addrs().ReadOnly
			if r := do(t, http.DefaultClient, "GET", "http://"+addr+"/healthz", ""); r.status != 200 {
				t.Fatalf("before stopping: %d", r.status)
			}
			tt.stop(t, s)
			if conn, err := net.Dial("tcp", addr); err == nil {
				conn.Close()
				t.Fatal("still accepting connections after stopping")
			}
		})
	}
}

func TestRun(t *testing.T) {
	s, err := New(testConfig(), testDeps(t, newClock()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var addr string
	for addr == "" {
		select {
		case err := <-done:
			t.Fatalf("Run returned early: %v", err)
		case <-time.After(time.Millisecond):
			addr = s.Addrs().ReadOnly
		}
	}
	if r := do(t, http.DefaultClient, "GET", "http://"+addr+"/healthz", ""); r.status != 200 {
		t.Fatalf("while running: %d", r.status)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
	if conn, err := net.Dial("tcp", addr); err == nil {
		conn.Close()
		t.Fatal("still accepting connections after Run returned")
	}
}
