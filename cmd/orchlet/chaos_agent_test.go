//go:build e2e

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAgentKilledOnContainerd runs orchchaos --agent on a containerd of the test's own: orchlet
// killed with SIGKILL while its static pods start and while they are deleted, restarted on the same
// root directory, and the runtime's sandboxes and containers judged after each restart (every pod
// running once, nothing leaked or doubled). Two kills of 20 pods within 1.2 s of each change by
// default (20 pods start in about 2 s); make chaos-agent gives
// ORCH_AGENT_CHAOS_ARGS (orchchaos' flags) for the long campaign.
func TestAgentKilledOnContainerd(t *testing.T) {
	ctd := startContainerd(t)
	bin := filepath.Join(t.TempDir(), "orchchaos")
	if out, err := exec.Command("go", "build", "-o", bin, "../orchchaos").CombinedOutput(); err != nil {
		t.Fatalf("building orchchaos: %v\n%s", err, out)
	}
	args := []string{"--agent", "--orchlet", binary, "--container-runtime-endpoint", "unix://" + ctd.sock,
		"--image", e2eImage, "--data-dir", t.TempDir(), "--kills", "2", "--pods", "20", "--max-up", "1s"}
	if extra := os.Getenv("ORCH_AGENT_CHAOS_ARGS"); extra != "" {
		args = append(args, strings.Fields(extra)...) // later flags win
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	t.Logf("orchchaos %s", strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		t.Fatalf("orchchaos --agent: %v", err)
	}
}
