package app

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	apiversion "k8s.io/apimachinery/pkg/version"

	"orch.io/orch/components/orchlet/app/apptest"
	"orch.io/orch/components/orchlet/host"
	"orch.io/orch/components/orchlet/options"
)

// parse parses args after a --root-dir of the test's own (args may give another): agents of tests
// running side by side would otherwise share the default one, which a running agent holds.
func parse(t testing.TB, args ...string) *options.Options {
	t.Helper()
	o, err := options.Parse(append([]string{"--root-dir=" + t.TempDir()}, args...), apiversion.Info{GitVersion: "v0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestRunRefusesOnHostChecks(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		setup func(*host.Fake)
		want  string
	}{
		{"swap", nil, func(f *host.Fake) { f.Swap = true }, "--fail-swap-on: swap is on"},
		{"cgroup v1", []string{"--fail-cgroupv1"}, func(f *host.Fake) { f.Cgroup = 1 }, "--fail-cgroupv1: the host uses cgroup v1"},
		{"kernel tunable", []string{"--protect-kernel-defaults"}, func(f *host.Fake) { f.Sysctls["kernel/panic_on_oops"] = 0 },
			"--protect-kernel-defaults: kernel tunable kernel/panic_on_oops is 0, want 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := host.NewFake()
			tt.setup(h)
			err := Run(context.Background(), parse(t, tt.args...), h, clock.NewMock())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestRunOnceWithoutSourcesReturns(t *testing.T) {
	if err := Run(context.Background(), parse(t, "--runonce", "--enable-server=false"), host.NewFake(), clock.NewMock()); err != nil {
		t.Fatal(err)
	}
}

func runAsync(o *options.Options, h host.Host, clk clock.Clock) (context.CancelFunc, <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, o, h, clk) }()
	return cancel, done
}

func wait(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return")
		return nil
	}
}

func TestRunBlocksUntilCancelled(t *testing.T) {
	cancel, done := runAsync(parse(t, apptest.WithRuntime(t)...), host.NewFake(), clock.NewMock())
	select {
	case err := <-done:
		t.Fatalf("Run returned before cancellation: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
}

func TestRunExitsOnLockContention(t *testing.T) {
	h := host.NewFake()
	cancel, done := runAsync(parse(t, apptest.WithRuntime(t, "--lock-file=/l", "--exit-on-lock-contention")...), h, clock.NewMock())
	defer cancel()
	deadline := time.Now().Add(5 * time.Second)
	for !h.Contend("/l") {
		if time.Now().After(deadline) {
			t.Fatal("Run never took the lock")
		}
		time.Sleep(time.Millisecond)
	}
	if err := wait(t, done); err != nil {
		t.Fatal(err)
	}
	if _, err := h.Lock("/l"); err != nil {
		t.Errorf("lock not released on exit: %v", err)
	}
}

// A contender waits for the holder to give way, with --exit-on-lock-contention too: the flag says
// what the holder does, and the contender is the agent meant to take over.
func TestRunWaitsForAHeldLock(t *testing.T) {
	for _, args := range [][]string{{"--lock-file=/l"}, {"--lock-file=/l", "--exit-on-lock-contention"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			h := host.NewFake()
			h.SetHeld("/l", true)
			clk := clock.NewMock()
			cancel, done := runAsync(parse(t, apptest.WithRuntime(t, args...)...), h, clk)
			defer cancel()
			for range 3 {
				clk.Add(time.Second)
				time.Sleep(time.Millisecond)
			}
			select {
			case err := <-done:
				t.Fatalf("Run returned while another process held the lock: %v", err)
			default:
			}
			if h.Contend("/l") {
				t.Fatal("Run holds a lock another process holds")
			}
			h.SetHeld("/l", false)
			deadline := time.Now().Add(5 * time.Second)
			for !h.Contend("/l") { // true once Run holds the lock
				if time.Now().After(deadline) {
					t.Fatal("Run never took the freed lock")
				}
				clk.Add(time.Second)
				time.Sleep(time.Millisecond)
			}
			cancel()
			if err := wait(t, done); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestRunGivesUpWaitingWhenCancelled(t *testing.T) {
	h := host.NewFake()
	h.SetHeld("/l", true)
	cancel, done := runAsync(parse(t, "--lock-file=/l"), h, clock.NewMock())
	cancel()
	err := wait(t, done)
	if err == nil || !strings.Contains(err.Error(), "--lock-file: /l: gave up waiting") {
		t.Fatalf("err = %v", err)
	}
}

// Kubernetes' kubelet refuses to run without its runtime; so does orchlet, naming the option.
func TestRunRefusesAnUnreachableRuntime(t *testing.T) {
	o := parse(t, "--enable-server=false", "--read-only-port=0", "--healthz-port=0", "--container-runtime-endpoint=unix://"+t.TempDir()+"/none.sock", "--runtime-request-timeout=2s")
	err := Run(context.Background(), o, host.NewFake(), clock.New())
	if err == nil || !strings.Contains(err.Error(), "--container-runtime-endpoint") {
		t.Fatalf("err = %v, want a refusal naming --container-runtime-endpoint", err)
	}
}

// --runonce runs the static pods and exits: with an API server there is no end, so the two are refused together.
func TestRunRefusesRunOnceInAPIServerMode(t *testing.T) {
	err := Run(context.Background(), parse(t, "--runonce", "--enable-server=false", "--orchconfig=/etc/orch/orchlet.conf"), host.NewFake(), clock.NewMock())
	if err == nil || !strings.Contains(err.Error(), "--runonce with --orchconfig") {
		t.Errorf("err = %v, want --runonce with --orchconfig refused", err)
	}
}

// A setting that acts only in API-server mode is refused in a standalone run when pods would run,
// and only then: checking a configuration with --runonce and no source still accepts it.
func TestRunRefusesAPIServerModeSettingsStandalone(t *testing.T) {
	err := Run(context.Background(), parse(t, "--enable-server=false", "--pod-manifest-path="+t.TempDir(), "--node-labels=example.com/team=a"), host.NewFake(), clock.NewMock())
	if err == nil || !strings.Contains(err.Error(), "--node-labels: it acts only in API-server mode") {
		t.Errorf("err = %v, want --node-labels refused", err)
	}
	if err := Run(context.Background(), parse(t, "--runonce", "--enable-server=false", "--node-labels=example.com/team=a"), host.NewFake(), clock.NewMock()); err != nil {
		t.Errorf("validating alone: %v", err)
	}
}

// Cancelled while it connects to the runtime, Run stops cleanly: a SIGTERM during start-up is not
// a failure to start.
func TestRunCancelledDuringStartUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Run(ctx, parse(t, apptest.WithRuntime(t)...), host.NewFake(), clock.NewMock()); err != nil {
		t.Fatalf("Run cancelled before the runtime answered: %v, want nil", err)
	}
}

// --pod-max-pids is enforced on the pod cgroup, which a machine without pod cgroups (a test's
// simulated one) does not have: the agent refuses it at start rather than run pods unlimited.
func TestRunRefusesPodMaxPidsWithoutPodCgroups(t *testing.T) {
	cancel, done := runAsync(parse(t, apptest.WithRuntime(t, "--pod-max-pids=64")...), host.NewFake(), clock.NewMock())
	defer cancel()
	err := wait(t, done)
	if err == nil || !strings.Contains(err.Error(), "--pod-max-pids (podPidsLimit): enforced on the pod cgroup") {
		t.Fatalf("err = %v, want --pod-max-pids refused", err)
	}
}

// The static CPU manager reads the CPU topology under the host's sysfs, and a simulated machine,
// which has none, refuses it.
func TestRunReadsTheCPUTopologyOfTheHost(t *testing.T) {
	args := apptest.WithRuntime(t, "--cpu-manager-policy=static", "--reserved-cpus=0", "--root-dir="+t.TempDir())
	err := Run(context.Background(), parse(t, args...), host.NewFake(), clock.NewMock())
	if err == nil || !strings.Contains(err.Error(), "the machine's CPU topology is unknown") {
		t.Errorf("on a simulated machine: %v", err)
	}
	h := host.NewFake()
	h.SysRoot = t.TempDir()
	online := filepath.Join(h.SysRoot, "devices", "system", "cpu", "online")
	if err := os.MkdirAll(filepath.Dir(online), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(online, []byte("7-x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = Run(context.Background(), parse(t, args...), h, clock.NewMock())
	if err == nil || !strings.Contains(err.Error(), `reading the CPU topology: online "7-x\n"`) {
		t.Errorf("on a host whose sysfs lists CPUs 7-x online: %v", err)
	}
}

// The credential provider plugins are read at start: a configuration or a plugin that is not
// there stops it, naming the option.
func TestRunLoadsCredentialProviders(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "credentials.yaml")
	if err := os.WriteFile(config, []byte("apiVersion: orchlet.config.orch.io/v1\nkind: CredentialProviderConfig\nproviders:\n- {name: absent, matchImages: [registry.example.com], defaultCacheDuration: 1m, apiVersion: credentialprovider.kubelet.k8s.io/v1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ config, want string }{
		{filepath.Join(dir, "none.yaml"), "--image-credential-provider-config: unable to access path"},
		{config, "--image-credential-provider-bin-dir: plugin binary executable " + filepath.Join(dir, "absent") + " did not exist"},
	} {
		args := apptest.WithRuntime(t, "--image-credential-provider-config="+tc.config, "--image-credential-provider-bin-dir="+dir)
		if err := Run(context.Background(), parse(t, args...), host.NewFake(), clock.NewMock()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

// The agent's /metrics serves the memory manager's pinning counters, as the kubelet's does
// whatever its policy: 0 under None.
func TestMetricsServeMemoryManagerPinning(t *testing.T) {
	port := apptest.FreePort(t)
	o := parse(t, apptest.WithRuntime(t, "--address=127.0.0.1", "--read-only-port="+port, "--root-dir="+t.TempDir())...)
	cancel, done := runAsync(o, host.NewFake(), clock.New())
	defer func() {
		cancel()
		if err := wait(t, done); err != nil {
			t.Error(err)
		}
	}()
	var body string
	waitFor(t, "the read-only server's /metrics", func() (bool, error) {
		resp, err := http.Get("http://127.0.0.1:" + port + "/metrics")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		body = string(data)
		return resp.StatusCode == http.StatusOK, err
	})
	for _, want := range []string{"orchlet_memory_manager_pinning_requests_total 0\n", "orchlet_memory_manager_pinning_errors_total 0\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
