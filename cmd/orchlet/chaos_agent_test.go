//go:build e2e

package main

import (
	"bytes"
	"context"
	"io"
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
	agentChaos(t)
}

// TestAgentKilledInAPIModeOnContainerd is the same campaign with orchlet in API-server mode on
// orch-apiserver, its pods created and deleted through the API, and their statuses there judged
// too (Running and Ready, the deleted gone, no restart); make chaos-agent-api gives
// ORCH_AGENT_CHAOS_ARGS for the long campaign.
func TestAgentKilledInAPIModeOnContainerd(t *testing.T) {
	apiserver := filepath.Join(t.TempDir(), "orch-apiserver")
	if out, err := exec.Command("go", "build", "-ldflags=-s -w", "-o", apiserver, "../orch-apiserver").CombinedOutput(); err != nil {
		t.Fatalf("building orch-apiserver: %v\n%s", err, out)
	}
	agentChaos(t, "--api-mode", "--apiserver", apiserver)
}

// agentChaos builds orchchaos and runs its agent mode with mode's flags on a containerd of the
// test's own.
func agentChaos(t *testing.T, mode ...string) {
	ctd := startContainerd(t)
	bin := filepath.Join(t.TempDir(), "orchchaos")
	if out, err := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, "../orchchaos").CombinedOutput(); err != nil {
		t.Fatalf("building orchchaos: %v\n%s", err, out)
	}
	args := append([]string{"--agent", "--orchlet", binary, "--container-runtime-endpoint", "unix://" + ctd.sock,
		"--image", e2eImage, "--data-dir", t.TempDir(), "--kills", "2", "--pods", "20", "--max-up", "1s"}, mode...)
	if extra := os.Getenv("ORCH_AGENT_CHAOS_ARGS"); extra != "" {
		args = append(args, strings.Fields(extra)...) // later flags win
	}
	// A sandbox of the agent's node an earlier run left, its container's task stranded as a kill
	// mid-start strands one: the campaign must clear it first, and say so.
	rs, _ := connectRuntime(context.Background(), t, "unix://"+ctd.sock)
	strandTask(t, ctd, rs, "leftover-chaos-agent")
	var out bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = io.MultiWriter(os.Stdout, &out), os.Stderr
	t.Logf("orchchaos %s", strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		t.Fatalf("orchchaos --agent: %v", err)
	}
	for _, want := range []string{"containerd kept the tasks of 1 containers CRI could not remove", "removed 1 sandboxes an earlier run left (<nil>)"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("orchchaos's output lacks %q", want)
		}
	}
}
