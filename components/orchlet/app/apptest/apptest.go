// Package apptest is what the orchlet's tests share, in-process (package app) and against the
// built binary (cmd/orchlet), with orchchaos's agent campaign: a fakecri to run on, free ports,
// waiting on real processes on the clock they are given, and clearing a runtime of its sandboxes.
package apptest

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	cri "k8s.io/cri-api/pkg/apis"

	"orch.io/orch/components/freeport"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/fakecritest"
)

// WithRuntime serves a fakecri on a unix socket for the test and returns args that run the agent
// on it with its servers off and a root directory of its own (args may give another), so tests
// need neither a real runtime nor the fixed ports, and never share the default --root-dir.
func WithRuntime(t testing.TB, args ...string) []string {
	t.Helper()
	_, sock := fakecritest.Start(t, fakecri.Options{Seed: 1})
	return append([]string{"--enable-server=false", "--read-only-port=0", "--healthz-port=0", "--container-runtime-endpoint=" + sock, "--root-dir=" + t.TempDir()}, args...)
}

// FreePort is a loopback TCP port free when asked.
func FreePort(t testing.TB) string {
	t.Helper()
	return strconv.Itoa(freeport.For(t))
}

// WaitWithin polls cond on clk until it holds, failing t with its last error after within. Real
// processes and runtimes keep the wall's pace, so their tests pass clock.New().
func WaitWithin(t testing.TB, clk clock.Clock, what string, within time.Duration, cond func() (bool, error)) {
	t.Helper()
	deadline := clk.Now().Add(within)
	var last error
	for clk.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		clk.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out after %v waiting for %s (last error: %v)", within, what, last)
}

// AnonymousKubeconfig writes the server's certificate and a kubeconfig that reaches it trusting
// that certificate, with no credentials, and returns the kubeconfig's path.
func AnonymousKubeconfig(t testing.TB, srv *httptest.Server) string {
	t.Helper()
	dir := t.TempDir()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), ca, 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dir, "orchlet.conf")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: orch, cluster: {server: %q, certificate-authority: ca.crt}}]
users: [{name: orchlet, user: {}}]
contexts: [{name: orch, context: {cluster: orch, user: orchlet}}]
current-context: orch
`, srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	return kubeconfig
}

// RemoveSandboxes stops and removes the runtime's sandboxes ids, their containers with them, 8 at
// a time; a failure is passed over, for the caller to find in a list afterwards.
func RemoveSandboxes(ctx context.Context, rs cri.RuntimeService, ids []string) {
	work := make(chan string)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for id := range work {
				_ = rs.StopPodSandbox(ctx, id)
				_ = rs.RemovePodSandbox(ctx, id)
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
}

// DeleteStrandedTasks deletes, with containerd's own client, the tasks of the containers ids that
// containerd keeps although CRI reports them exited. containerd 1.6 strands a task when a
// StartContainer is cancelled after the shim made the task and before containerd had its pid (as a
// kill of the agent mid-call does): the container shows a StartError, CRI refuses to remove it or
// its sandbox ("cannot delete running task") and no CRI call deletes the task. It does nothing and
// answers 0 on a runtime other than containerd at a unix socket. The count is of tasks deleted;
// an id without a task is not one.
func DeleteStrandedTasks(ctx context.Context, rs cri.RuntimeService, endpoint string, ids []string) (int, error) {
	socket, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok || len(ids) == 0 {
		return 0, nil
	}
	v, err := rs.Version(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("the runtime's version: %w", err)
	}
	if v.GetRuntimeName() != "containerd" {
		return 0, nil
	}
	var deleted int
	for _, id := range ids {
		out, err := exec.CommandContext(ctx, "ctr", "--address", socket, "--namespace", "k8s.io", "task", "delete", "--force", id).CombinedOutput()
		switch {
		case err == nil:
			deleted++
		case strings.Contains(string(out), "not found"):
		default:
			return deleted, fmt.Errorf("ctr task delete --force %s: %v: %s", id, err, strings.TrimSpace(string(out)))
		}
	}
	return deleted, nil
}
