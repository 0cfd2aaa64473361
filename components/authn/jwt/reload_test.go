package jwt

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"orch.io/orch/components/apis/apiserver/config"
)

// reloadEnv is an authentication configuration file, its reloader and the reloader's metrics.
type reloadEnv struct {
	t    testing.TB
	e    *env
	file string
	reg  *prometheus.Registry
	r    *Reloader
}

func (e *env) document(anonymous bool, jwts ...map[string]any) []byte {
	doc := map[string]any{
		"apiVersion": "apiserver.config.orch.io/v1",
		"kind":       "AuthenticationConfiguration",
		"jwt":        jwts,
	}
	if anonymous {
		doc["anonymous"] = map[string]any{"enabled": true}
	}
	return mustJSON(e.t, doc)
}

func (e *env) startReloader(data []byte) *reloadEnv {
	e.t.Helper()
	file := filepath.Join(e.t.TempDir(), "authentication.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		e.t.Fatal(err)
	}
	auth, err := config.LoadAuthentication(file)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	reg := prometheus.NewRegistry()
	r, err := NewReloader(ctx, auth, e.clk, reg, "apiserver-test")
	if err != nil {
		e.t.Fatal(err)
	}
	wait, done := context.WithTimeout(ctx, 10*time.Second)
	defer done()
	if err := r.Current().WaitInitialized(wait); err != nil {
		e.t.Fatalf("initial authenticators: %v", r.Current().HealthCheck())
	}
	return &reloadEnv{t: e.t, e: e, file: file, reg: reg, r: r}
}

// write replaces the file's content (atomically, as configuration management does).
func (re *reloadEnv) write(data []byte) {
	re.t.Helper()
	tmp := re.file + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		re.t.Fatal(err)
	}
	if err := os.Rename(tmp, re.file); err != nil {
		re.t.Fatal(err)
	}
}

// reloads is the value of apiserver_authentication_config_controller_automatic_reloads_total for
// status, read from the registry.
func (re *reloadEnv) reloads(status string) float64 {
	return metric(re.t, re.reg, "apiserver_authentication_config_controller_automatic_reloads_total", "status", status)
}

func metric(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	idHash := fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("apiserver-test")))
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if got["apiserver_id_hash"] != idHash {
				t.Fatalf("%s: apiserver_id_hash %q, want %q", name, got["apiserver_id_hash"], idHash)
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if got[labels[i]] != labels[i+1] {
					continue metrics
				}
			}
			if m.Counter != nil {
				return m.Counter.GetValue()
			}
			return m.Gauge.GetValue()
		}
	}
	return 0
}

// stepUntil calls step until cond holds, for up to 10s of real time.
func stepUntil(t *testing.T, what string, step func(), cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %s", what)
		}
		step()
		time.Sleep(10 * time.Millisecond)
	}
}

// tick moves the clock past the next read of the file and waits until cond holds.
func (re *reloadEnv) tickUntil(what string, cond func() bool) {
	re.t.Helper()
	re.e.clk.Add(ReloadInterval)
	eventually(re.t, what, cond)
}

func TestReloadReplacesAuthenticators(t *testing.T) {
	e := newEnv(t)
	second := newEnv(t)
	second.clk = e.clk
	first := e.document(false, e.jwtConfig())
	re := e.startReloader(first)
	if got := metric(t, re.reg, "apiserver_authentication_config_controller_last_config_info", "hash", hash(first)); got != 1 {
		t.Fatalf("last_config_info of the loaded file = %v, want 1", got)
	}
	expectUser(t, re.r, e.token(nil))
	noOpinion(t, re.r, second.token(nil))

	// The same issuer with another prefix, and a second issuer: tokens of the first issuer are
	// accepted throughout the swap, under one name or the other.
	renamed := e.jwtConfig()
	renamed["claimMappings"] = map[string]any{"username": map[string]any{"claim": "sub", "prefix": "new:"}}
	next := e.document(false, renamed, second.jwtConfig())
	token := e.token(nil)
	var failures atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				user, ok, err := re.r.AuthenticateToken(context.Background(), token)
				if !ok || err != nil || (user.Name != "oidc:alice" && user.Name != "new:alice") {
					failures.Add(1)
				}
			}
		})
	}
	re.write(next)
	re.tickUntil("the new file applied", func() bool { return re.reloads("success") == 1 })
	close(stop)
	wg.Wait()
	if n := failures.Load(); n != 0 {
		t.Fatalf("%d requests failed during the reload", n)
	}
	if u := expectUser(t, re.r, token); u.Name != "new:alice" {
		t.Errorf("after the reload: %q, want new:alice", u.Name)
	}
	expectUser(t, re.r, second.token(nil))
	if got := metric(t, re.reg, "apiserver_authentication_config_controller_automatic_reload_last_timestamp_seconds", "status", "success"); got != float64(e.clk.Now().Unix()) {
		t.Errorf("last reload timestamp %v, want %v", got, e.clk.Now().Unix())
	}
	if got := metric(t, re.reg, "apiserver_authentication_config_controller_last_config_info", "hash", hash(next)); got != 1 {
		t.Errorf("last_config_info of the new file = %v, want 1", got)
	}
	if re.reloads("failure") != 0 {
		t.Errorf("%v failures", re.reloads("failure"))
	}
}

// Every bad new content is refused, counted and logged, and the authenticators in use stay; bad
// content is not tried again until the file changes.
func TestReloadRefusesBadFiles(t *testing.T) {
	e := newEnv(t)
	re := e.startReloader(e.document(true, e.jwtConfig()))
	egress := e.jwtConfig()
	egress["issuer"].(map[string]any)["egressSelectorType"] = "cluster"
	noAudience := e.jwtConfig()
	delete(noAudience["issuer"].(map[string]any), "audiences")
	other := newEnv(t)
	tests := []struct {
		name string
		data []byte
	}{
		{"not YAML", []byte("jwt: [")},
		{"empty", nil},
		{"invalid authenticator", e.document(true, noAudience)},
		{"anonymous section changed", e.document(false, e.jwtConfig(), other.jwtConfig())},
		{"egress selection", e.document(true, egress)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			re.t = t
			re.write(tt.data)
			re.tickUntil("the failure counted", func() bool { return re.reloads("failure") == float64(i+1) })
			expectUser(t, re.r, e.token(nil))
			noOpinion(t, re.r, other.token(nil))
			// The same content is not counted again.
			e.clk.Add(ReloadInterval)
			time.Sleep(50 * time.Millisecond)
			if got := re.reloads("failure"); got != float64(i+1) {
				t.Fatalf("%v failures after the same content was read again, want %d", got, i+1)
			}
		})
	}
	if re.reloads("success") != 0 {
		t.Errorf("%v successes", re.reloads("success"))
	}
}

// A missing file is a failure each time it is read, not remembered: the file may come back.
func TestReloadMissingFile(t *testing.T) {
	e := newEnv(t)
	data := e.document(false, e.jwtConfig())
	re := e.startReloader(data)
	if err := os.Remove(re.file); err != nil {
		t.Fatal(err)
	}
	re.tickUntil("first failure", func() bool { return re.reloads("failure") == 1 })
	re.tickUntil("second failure", func() bool { return re.reloads("failure") == 2 })
	expectUser(t, re.r, e.token(nil))
	// Back with the content in use: nothing to apply.
	re.write(data)
	e.clk.Add(ReloadInterval)
	time.Sleep(50 * time.Millisecond)
	if re.reloads("success") != 0 || re.reloads("failure") != 2 {
		t.Fatalf("success %v, failure %v after the file came back unchanged", re.reloads("success"), re.reloads("failure"))
	}
}

// A new file whose issuer cannot be reached yet does not replace working authenticators: the wait
// ends after a minute, the old ones stay, and the file is tried again until the issuer answers.
func TestReloadWaitsForIssuers(t *testing.T) {
	e := newEnv(t)
	re := e.startReloader(e.document(false, e.jwtConfig()))
	late := newEnv(t)
	late.clk = e.clk
	late.p.ReportIssuer("https://elsewhere.example.com")
	re.write(e.document(false, e.jwtConfig(), late.jwtConfig()))
	e.clk.Add(ReloadInterval)
	eventually(t, "the new issuer tried", func() bool { return len(late.p.DiscoveryPaths()) > 0 })
	// The wait's timer starts once the reload is under way: the clock moves until it has run out.
	stepUntil(t, "the wait given up", func() { e.clk.Add(updateTimeout) }, func() bool { return re.reloads("failure") > 0 })
	expectUser(t, re.r, e.token(nil))
	noOpinion(t, re.r, late.token(nil))
	if re.reloads("success") != 0 {
		t.Fatal("the unreachable issuer's file was applied")
	}

	late.p.ReportIssuer(late.p.URL)
	stepUntil(t, "the file applied once the issuer answers", func() { e.clk.Add(ReloadInterval) }, func() bool { return re.reloads("success") == 1 })
	expectUser(t, re.r, late.token(nil))
	expectUser(t, re.r, e.token(nil))
}

// A file changed between its load and the reloader's start is applied at the first read.
func TestReloadChangedBeforeStart(t *testing.T) {
	e := newEnv(t)
	file := filepath.Join(t.TempDir(), "authentication.json")
	if err := os.WriteFile(file, e.document(false, e.jwtConfig()), 0o600); err != nil {
		t.Fatal(err)
	}
	auth, err := config.LoadAuthentication(file)
	if err != nil {
		t.Fatal(err)
	}
	renamed := e.jwtConfig()
	renamed["claimMappings"] = map[string]any{"username": map[string]any{"claim": "sub", "prefix": "new:"}}
	if err := os.WriteFile(file, e.document(false, renamed), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	r, err := NewReloader(t.Context(), auth, e.clk, reg, "apiserver-test")
	if err != nil {
		t.Fatal(err)
	}
	e.clk.Add(ReloadInterval)
	eventually(t, "the change applied", func() bool {
		user, ok, _ := r.AuthenticateToken(context.Background(), e.token(nil))
		return ok && user.Name == "new:alice"
	})
}

// hash is Kubernetes' label form of a file's hash, as last_config_info carries it.
func hash(data []byte) string {
	return fmt.Sprintf("sha256:%x", sha256.Sum256(data))
}
