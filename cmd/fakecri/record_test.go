package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/fakecritest"
	"orch.io/orch/fakecri/record"
	fakescript "orch.io/orch/fakecri/script"
	"orch.io/orch/sim/scenario"
)

// TestRecordThenReplay runs `fakecri record` (the real main, in a child process) in front of a
// fakecri, drives a static pod's calls through it as an agent would, stops it with SIGTERM and
// replays the scenario it wrote: the container that exited 2 after 300ms in the recording exits the
// same way in the replay, so the replay's pod restarts.
func TestRecordThenReplay(t *testing.T) {
	up, upstream := fakecritest.Start(t, fakecri.Options{Seed: 1, Script: &fakescript.Script{
		Containers: []fakescript.ContainerRule{{Match: fakescript.ContainerMatch{Name: "quick"}, Exit: &fakescript.ExitSpec{After: fakescript.Duration(300 * time.Millisecond), Code: 2}}},
	}})
	dir := t.TempDir()
	manifests := filepath.Join(dir, "manifests")
	os.Mkdir(manifests, 0o755)
	os.WriteFile(filepath.Join(manifests, "web.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: quick, image: app:1}\n"), 0o644)
	out := filepath.Join(dir, "rec")
	sock := filepath.Join(dir, "rec.sock")
	a, _ := json.Marshal([]string{"record", "--upstream", upstream, "--listen", "unix://" + sock, "--out", out, "--node", "n1",
		"--sample-period", "100ms", "--manifests", manifests, "--node-arg=--eviction-hard=memory.available<100Mi"})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FAKECRI_ARGS="+string(a))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the recorder did not listen: %s", stderr.String())
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, is := fakecritest.Clients(t, "unix://"+sock)
	if _, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: "app:1"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	pod, err := rs.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web-n1", Namespace: "default", Uid: "u1"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	id, err := rs.CreateContainer(ctx, pod, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "quick"}, Image: &runtimeapi.ImageSpec{Image: "app:1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	time.Sleep(700 * time.Millisecond) // the exit, and a few samples
	if n := len(up.Calls(calllog.Filter{Method: "ListContainerStats"})); n < 2 {
		t.Errorf("the recorder sampled %d times in 700ms at a 100ms period", n)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("fakecri record: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "written to "+out) {
		t.Errorf("stderr: %s", stderr.String())
	}

	s, err := scenario.Load(filepath.Join(out, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := s.Nodes[0]
	if n.Name != "n1" || len(n.Manifests) != 1 || n.Manifests[0].Name != "web.yaml" || strings.Join(n.Args, " ") != "--eviction-hard=memory.available<100Mi --pod-manifest-path="+manifests || n.Host == nil {
		t.Errorf("node = %+v", n)
	}
	if len(n.Fakecri.Containers) != 1 || n.Fakecri.Containers[0].Exit == nil || n.Fakecri.Containers[0].Exit.Code != 2 {
		t.Fatalf("recorded containers: %+v", n.Fakecri.Containers)
	}
	// A replay long enough for the restart the recording would have seen.
	s.Duration = scenario.Duration(15 * time.Second)
	res, err := s.Run(0)
	if err != nil {
		t.Fatal(err)
	}
	sum := scenario.Summarize(res.Entries, s.Duration.D())
	if len(sum.Pods) != 1 || sum.Pods[0].Pod != "default/web-n1" || sum.Pods[0].Restarts < 1 {
		t.Errorf("replay's pods: %+v\n%s", sum.Pods, res.Trace)
	}
}

func TestRecordRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"record", "--out", "x", "--node", "n"}, "--upstream is required"},
		{[]string{"record", "--upstream", "unix:///x.sock", "--node", "n"}, "--out is required"},
		{[]string{"record", "--upstream", "unix:///x.sock", "--out", "x"}, "--node is required"},
		{[]string{"record", "--upstream", "unix:///x.sock", "--out", "x", "--node", "n", "--sample-period", "0s"}, "--sample-period must be positive"},
		{[]string{"record", "--upstream", "unix:///x.sock", "--out", "x", "--node", "n", "--manifests", "/no/such"}, "--manifests /no/such: not a directory"},
		{[]string{"record", "--upstream", "http://x", "--out", "x", "--node", "n"}, "--upstream: endpoint"},
		{[]string{"record", "--upstream", "unix:///x.sock", "--out", "x", "--node", "n", "--api-pods", "/no/such"}, "--api-pods: open /no/such"},
		{[]string{"record", "--upstream", "unix:///x.sock", "--out", "x", "--node", "n", "--api-pods", t.TempDir()}, "no pod files"},
		{[]string{"record", "--sample-periods", "1s"}, "flag provided but not defined: -sample-periods"},
		{[]string{"record", "--upstream", "unix:///x.sock", "--out", "x", "--node", "n", "--node-arg=--eviction-hrad=memory.available<1Gi"}, "--node-arg: unknown flag: --eviction-hrad"},
	} {
		var b bytes.Buffer
		if code := run(context.Background(), c.args, &b); code == 0 || !strings.Contains(b.String(), c.want) {
			t.Errorf("%q: exit %d, %q; want %q", c.args, code, b.String(), c.want)
		}
	}
}

// TestRecordingOfAPIPodsLoads checks the skeleton of a node that ran pods from the API server: an
// API-mode node creating them at its start, which the scenario reader takes.
func TestRecordingOfAPIPodsLoads(t *testing.T) {
	_, upstream := fakecritest.Start(t, fakecri.Options{Seed: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := record.New(ctx, record.Options{Upstream: upstream})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	out := t.TempDir()
	pod := "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  nodeName: n1\n  containers:\n  - {name: app, image: app:1}\n"
	if err := rec.WriteRecording(out, record.Recording{Node: "n1", APIPods: []string{pod}}); err != nil {
		t.Fatal(err)
	}
	s, err := scenario.Load(filepath.Join(out, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Nodes[0].API || len(s.Timeline) != 1 || s.Timeline[0].At.D() != 0 || s.Timeline[0].CreatePod != pod {
		t.Errorf("node %+v, timeline %+v", s.Nodes[0], s.Timeline)
	}
}
