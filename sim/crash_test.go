package sim

import (
	"strings"
	"testing"
	"time"

	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/script"
	"orch.io/orch/sim/converge"
)

// killStory runs a node whose agent is killed twice: once with two pods running (restarted 10s
// later), once in the middle of a 30s pull (restarted 5s later).
func killStory(t *testing.T) (string, []string) {
	t.Helper()
	w, err := New(Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	script := &script.Script{Images: []script.ImageRule{{Match: "slow*", PullDuration: script.Duration(30 * time.Second)}}}
	n, err := w.AddNode(NodeOptions{Name: "node-a", Script: script, Args: []string{"--pod-manifest-path=/etc/orch/manifests"}})
	if err != nil {
		t.Fatal(err)
	}
	n.WriteManifest("web.yaml", []byte(webManifest))
	n.WriteManifest("db.yaml", []byte(strings.ReplaceAll(webManifest, "web", "db")))
	want := map[string][]string{"default/web-node-a": {"app"}, "default/db-node-a": {"app"}}
	var findings []string
	judge := func(before fakecri.State) {
		d := converge.Differences(n.Runtime.State(), want)
		findings = append(findings, d.Leaked...)
		findings = append(findings, d.Doubled...)
		findings = append(findings, d.Missing...)
		pods, containers := converge.Replaced(before, n.Runtime.State(), want)
		findings = append(append(findings, pods...), containers...)
	}

	if err := w.RunUntil(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	before := n.Runtime.State()
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := n.Kill(); err == nil {
		t.Error("a killed agent killed again")
	}
	if err := w.RunUntil(40 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(); err == nil {
		t.Error("a running agent restarted")
	}
	if err := w.RunUntil(70 * time.Second); err != nil {
		t.Fatal(err)
	}
	judge(before)

	n.WriteManifest("slow.yaml", []byte(strings.ReplaceAll(strings.ReplaceAll(webManifest, "web", "slow"), "busybox", "slow")))
	want["default/slow-node-a"] = []string{"app"}
	if err := w.RunUntil(90 * time.Second); err != nil { // the pull started at 80s, the next read
		t.Fatal(err)
	}
	before = n.Runtime.State()
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := w.RunUntil(95 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := n.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := w.RunUntil(3 * time.Minute); err != nil {
		t.Fatal(err)
	}
	judge(before)
	return w.TraceText(), findings
}

// A killed agent is restarted on its runtime: the calls it was in end Canceled at the kill, nothing
// is traced while it is down, and the new agent adopts the running pods (no sandbox made again),
// pulls what the killed one was pulling and converges, the same bytes every run.
func TestKillRestart(t *testing.T) {
	tr, findings := killStory(t)
	for _, f := range findings {
		t.Errorf("after a restart: %s", f)
	}
	for _, want := range []string{
		"00:00:30.000 node-a world orchlet killed (SIGKILL)",
		"00:00:40.000 node-a world orchlet restarted on its root directory",
		"00:00:40.000 node-a source ADD file default/web-node-a",
		"00:01:30.000 node-a cri PullImage -> Canceled after 10s",
		"00:01:35.000 node-a cri PullImage image=slow:1.36",
		"00:02:05.000 node-a cri PullImage -> OK after 30s",
		"node-a pod default/slow-node-a Running app=running",
	} {
		if !strings.Contains(tr, want) {
			t.Errorf("trace lacks %q", want)
		}
	}
	for _, l := range strings.Split(tr, "\n") {
		if l > "00:00:30.001" && l < "00:00:40.000" {
			t.Errorf("traced while the agent was down: %s", l)
		}
		if l > "00:00:30.000" && l < "00:01:20.000" && strings.Contains(l, "RunPodSandbox") {
			t.Errorf("a sandbox made after the restart: %s", l)
		}
	}
	if again, _ := killStory(t); again != tr {
		t.Fatalf("a second run differs:\n%s", firstDifference(tr, again))
	}
	if t.Failed() {
		t.Log(tr)
	}
}
