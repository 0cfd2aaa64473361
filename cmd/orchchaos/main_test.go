package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary serve as an etcd member, as orchchaos runs itself for one.
func TestMain(m *testing.M) {
	if slices.Contains(os.Args, "--serve-etcd-member") {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Two kills of a real orch-apiserver under 8 writing clients: nothing acknowledged lost, nothing
// half there, the watch complete and in order.
func TestTwoKills(t *testing.T) {
	if testing.Short() {
		t.Skip("starts orch-apiserver three times")
	}
	twoKills(t, buildServer(t), 0)
}

// The same on a 3-member etcd cluster, its members child processes.
func TestTwoKillsOnThreeMembers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three etcd members and orch-apiserver three times")
	}
	twoKills(t, buildServer(t), 3)
}

// Two etcd faults under two replicas: the leader killed, then a follower stopped; writes retried
// against the other replica, nothing acknowledged lost, both replicas' watches complete.
func TestFailoverTwoRounds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three etcd members and two orch-apiservers")
	}
	var out bytes.Buffer
	v, err := runFailover(context.Background(), options{apiserver: buildServer(t), dataDir: t.TempDir(), kills: 2, clients: 8, seed: 7, maxUp: time.Second, etcdMembers: 3, replicas: 2}, &out)
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() || v.Acked < 16 || !strings.Contains(out.String(), "the leader killed") || !strings.Contains(out.String(), "a follower stopped") {
		t.Fatalf("acknowledged %d, problems: %v", v.Acked, v.Problems)
	}
}

// A compaction while the server is down: the watcher's resume is refused with 410 Gone, and it
// relists, after each kill.
func TestRelistAfterCompaction(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three etcd members and orch-apiserver three times")
	}
	var out bytes.Buffer
	v, err := run(context.Background(), options{apiserver: buildServer(t), dataDir: t.TempDir(), kills: 2, clients: 8, seed: 7, maxUp: time.Second, etcdMembers: 3, compact: true}, &out)
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() || !strings.Contains(out.String(), "relists 2: PASS") {
		t.Fatalf("problems: %v", v.Problems)
	}
}

func buildServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "orch-apiserver")
	build := exec.Command(goTool(), "build", "-ldflags=-s -w", "-o", bin, "../orch-apiserver")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building orch-apiserver: %v\n%s", err, out)
	}
	return bin
}

func twoKills(t *testing.T, bin string, members int) {
	t.Helper()
	var out bytes.Buffer
	v, err := run(context.Background(), options{apiserver: bin, dataDir: t.TempDir(), kills: 2, clients: 8, seed: 7, maxUp: time.Second, etcdMembers: members}, &out)
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !v.OK() {
		t.Fatalf("problems: %v", v.Problems)
	}
	if v.Acked < 16 {
		t.Fatalf("%d writes acknowledged, want at least one round of the 8 clients' writes", v.Acked)
	}
	if !strings.Contains(out.String(), "total: 2 kills") {
		t.Fatalf("no total line:\n%s", out.String())
	}
}

// goTool is the go command of the toolchain running the tests.
func goTool() string {
	if goroot := os.Getenv("GOROOT"); goroot != "" {
		if p := filepath.Join(goroot, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
