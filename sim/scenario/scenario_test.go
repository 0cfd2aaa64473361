package scenario

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Every shipped scenario meets its expectations and replays its golden trace byte for byte, with
// one processor and with eight.
func TestShippedScenarios(t *testing.T) {
	files, err := Find(filepath.Join("..", "..", "scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d scenarios, want the 10 or more shipped", len(files))
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, procs := range []int{1, 8} {
		runtime.GOMAXPROCS(procs)
		for _, f := range files {
			s, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			r, err := s.Run(0)
			if err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
			for _, fail := range r.Failures {
				t.Errorf("%s (GOMAXPROCS=%d): %s", s.Name, procs, fail)
			}
			if diff, err := r.Compare(); err != nil || diff != "" {
				t.Errorf("%s (GOMAXPROCS=%d): golden mismatch (%v):\n%s", s.Name, procs, err, diff)
			}
		}
	}
}

// Background pulls (--serialize-image-pulls=false) reach the runtime in whatever order the
// scheduler picks; the trace is the same bytes anyway, run after run.
func TestParallelPullsDeterministic(t *testing.T) {
	runs := 20
	if testing.Short() {
		runs = 4
	}
	s, err := Load(filepath.Join("..", "..", "scenarios", "parallel-image-pulls.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for i := range runs {
		runtime.GOMAXPROCS(1 + 7*(i%2))
		r, err := s.Run(0)
		if err != nil {
			t.Fatal(err)
		}
		if diff, err := r.Compare(); err != nil || diff != "" {
			t.Fatalf("run %d (GOMAXPROCS=%d): golden mismatch (%v):\n%s", i, runtime.GOMAXPROCS(0), err, diff)
		}
	}
}

func load(t *testing.T, text string) (*Scenario, error) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return Load(p)
}

// Every kind of expectation passes on a trace that meets it, the golden is written and matched,
// and a changed golden comes back as a diff naming the changed lines.
func TestExpectationsAndGolden(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "tiny.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := load(t, string(data))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "s" || s.Seed != 1 {
		t.Fatalf("name %q seed %d, want the file name and seed 1", s.Name, s.Seed)
	}
	r, err := s.Run(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Failures) > 0 {
		t.Fatalf("failures: %v\n%s", r.Failures, r.Trace)
	}
	if _, err := r.Compare(); err == nil || !strings.Contains(err.Error(), "--update") {
		t.Fatalf("compare without a golden: %v, want an error pointing at --update", err)
	}
	if err := r.Update(); err != nil {
		t.Fatal(err)
	}
	if diff, err := r.Compare(); err != nil || diff != "" {
		t.Fatalf("compare after update: %q, %v", diff, err)
	}
	changed := strings.Replace(r.Trace, "Running app=running", "Pending app=waiting(ContainerCreating)", 1)
	if err := os.WriteFile(s.Golden(), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	diff, err := r.Compare()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--- golden", "+++ this run", "@@ golden line", "- 00:00:00.000 node-a pod default/web-node-a Pending", "+ 00:00:00.000 node-a pod default/web-node-a Running"} {
		if !strings.Contains(diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, diff)
		}
	}
}

// Unmet expectations are each reported with what the trace holds instead.
func TestUnmetExpectations(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "tiny.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.NewReplacer(
		`contains: ["00:00:20.000`, `contains: ["00:00:21.000`,
		`absent: ["* cri ListContainers *"]`, `absent: ["* source file read *"]`,
		`lines: 2`, `lines: 3`,
		`state: "Running app=running"`, `state: "Pending*"`,
		`count: 1}]`, `count: 2}]`,
	).Replace(string(data))
	s, err := load(t, text)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`no trace line matches "00:00:21.000 node-a source file read *"`,
		`2 trace lines match "* source file read *", which must not appear`,
		`2 trace lines match "* source file read *", want 3`,
		`1 event writes (*) of reason Started, want 2`,
		`pod default/web-node-a on node-a at 00:00:01.000 is "Running app=running", want "Pending*"`,
	}
	if strings.Join(r.Failures, "\n") != strings.Join(want, "\n") {
		t.Fatalf("failures:\n%s\nwant:\n%s", strings.Join(r.Failures, "\n"), strings.Join(want, "\n"))
	}
}

// A scenario with several mistakes names each by its field.
func TestLoadErrors(t *testing.T) {
	_, err := load(t, `
duration: 0s
nodes: [{name: a}, {name: a}]
timeline: [{at: 20s, node: b}, {at: 10s}]
expect: {pods: [{at: 1s, node: c, pod: x/y, state: gone}]}
`)
	if err == nil {
		t.Fatal("a broken scenario loaded")
	}
	for _, want := range []string{"duration: must be positive", `nodes[1].name: "a" given twice`, `timeline[0].node: no node "b"`, "timeline[0].at: 20s is outside", "timeline[1].at: 10s is before the step above it (20s): steps must be in time order", `expect.pods[0].node: no node "c"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if _, err := load(t, "duration: 1s\nnodes: [{name: a}]\nbogus: 1\n"); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown field: %v, want an error naming it", err)
	}
}

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pat, s string
		want   bool
	}{
		{"*", "", true},
		{"a*c", "abbbc", true},
		{"a*c", "abbbd", false},
		{"a?c", "abc", true},
		{"* x/y *", "00:00 x/y z", true},
		{"*[web.yaml]", "read: [web.yaml]", true},
		{"ab", "abc", false},
	} {
		if got := compileGlob(tc.pat).match(tc.s); got != tc.want {
			t.Errorf("glob %q on %q = %v, want %v", tc.pat, tc.s, got, tc.want)
		}
	}
}

// The diff keeps only a few unchanged lines around each change.
func TestDiffContext(t *testing.T) {
	var a []string
	for i := range 30 {
		a = append(a, strings.Repeat("x", i+1))
	}
	b := append([]string(nil), a...)
	b[15] = "changed"
	d := Diff(strings.Join(a, "\n")+"\n", strings.Join(b, "\n")+"\n")
	want := "--- golden (30 lines)\n+++ this run (30 lines)\n@@ golden line 13, this run line 13 @@\n" +
		"  " + a[12] + "\n  " + a[13] + "\n  " + a[14] + "\n- " + a[15] + "\n+ changed\n  " + a[16] + "\n  " + a[17] + "\n  " + a[18] + "\n"
	if d != want {
		t.Fatalf("diff:\n%s\nwant:\n%s", d, want)
	}
}

// The report lists each scenario with its rules and verdict, and a failure's problems.
func TestReport(t *testing.T) {
	s := &Scenario{Name: "a", Path: "scenarios/a.yaml", Description: "Does a.", Rules: []string{"rule one"}, Duration: Duration(60e9)}
	out := Report([]Outcome{
		{Scenario: s, Result: &Result{Trace: "x\ny\n"}},
		{Scenario: &Scenario{Name: "b", Path: "scenarios/b.yaml", Duration: Duration(1e9)}, Result: &Result{}, Problems: []string{"no trace line matches"}},
	})
	for _, want := range []string{"1 of 2 scenarios pass", "| [a](../scenarios/a.yaml) | 00:01:00.000 | 0s | 2 | pass |", "| **fail** |", "- rule one", "Result: **fail**", "no trace line matches"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// Reading the nodes' signals changes nothing the trace records, and reads what the eviction
// manager reads: 10s before the leak's eviction at 6m, memory.available is the 97704Ki the
// Evicted event names plus 10s of a 2Mi/s leak, of the host's 1Gi.
func TestSignalSamples(t *testing.T) {
	s, err := Load(filepath.Join("..", "..", "scenarios", "eviction-memory-leak-hard.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.RunWith(RunOptions{SignalPeriod: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if diff, err := r.Compare(); err != nil || diff != "" {
		t.Fatalf("sampling changed the trace (%v):\n%s", err, diff)
	}
	samples := r.Samples["node-a"]
	if len(samples) < 40 || len(samples) > 49 {
		t.Errorf("%d samples in 8m at most one per 10s, want 40 to 49", len(samples))
	}
	for i, x := range samples {
		if i > 0 && x.At-samples[i-1].At < 10*time.Second {
			t.Errorf("samples at %v and %v: closer than the period", samples[i-1].At, x.At)
		}
		if x.At == 5*time.Minute+50*time.Second {
			if x.Available[0] != (97704+20480)<<10 || x.Capacity[0] != 1<<30 {
				t.Errorf("memory at 5m50s: %d of %d, want %d of 1Gi", x.Available[0], x.Capacity[0], (97704+20480)<<10)
			}
			return
		}
	}
	t.Errorf("no sample at 5m50s in %v", samples)
}

// expect.runtime judges the runtime at its time by converge.Differences and, with since, converge.Replaced:
// a restart that adopts its pod meets it; a pod named that is not there is missing, the one that
// runs unnamed leaked, and a pod whose manifest changed (made again in a new sandbox) replaced.
func TestRuntimeExpectation(t *testing.T) {
	const text = `duration: 40s
nodes:
- name: node-a
  args: ["--pod-manifest-path=/etc/orch/manifests"]
  fakecri: {node: {preloadImages: ["app:1", "app:2"]}}
  manifests:
  - name: web.yaml
    content: "{apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {containers: [{name: app, image: 'app:1'}]}}"
timeline:
- {at: 10s, orchlet: kill}
- {at: 20s, orchlet: restart}
- at: 25s
  write: {name: web.yaml, content: "{apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {containers: [{name: app, image: 'app:2'}]}}"}
expect:
  runtime:
  - {at: 30s, since: 10s, pods: {default/web-node-a: [app]}}
  - {at: 40s, pods: {default/db-node-a: [db]}}
  - {at: 40s, since: 10s, pods: {default/web-node-a: [app]}}
`
	s, err := load(t, text)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"runtime of node-a at 00:00:40.000: leaked: sandbox * of default/web-node-a ready, no such pod",
		"runtime of node-a at 00:00:40.000: leaked: container app of default/web-node-a running, not in the pod",
		"runtime of node-a at 00:00:40.000: missing: default/db-node-a: 0 ready sandboxes",
		"runtime of node-a at 00:00:40.000: missing: default/db-node-a/db: 0 running",
		"runtime of node-a at 00:00:40.000: replaced since 00:00:10.000: default/web-node-a: sandbox * made again (now *)",
	}
	if len(r.Failures) != len(want) {
		t.Fatalf("failures %q, want %q", r.Failures, want)
	}
	for i, f := range r.Failures {
		if !compileGlob(want[i]).match(f) {
			t.Errorf("failure %d = %q, want %q", i, f, want[i])
		}
	}
	if !strings.Contains(r.Trace, "00:00:10.000 node-a world orchlet killed (SIGKILL)") {
		t.Errorf("the kill is not traced:\n%s", r.Trace)
	}
}

// A node whose agent refused to start has no agent to kill: the replay stops with an error naming
// the step, not a panic.
func TestOrchletKillOfARefusedNode(t *testing.T) {
	s, err := load(t, `duration: 20s
nodes:
- {name: node-ok, args: ["--pod-manifest-path=/etc/orch/manifests"]}
- {name: node-swap, args: ["--pod-manifest-path=/etc/orch/manifests"], host: {swap: true}}
timeline:
- {at: 10s, node: node-swap, orchlet: kill}
`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(0); err == nil || !strings.Contains(err.Error(), "orchlet kill: the node's agent refused to start") {
		t.Fatalf("Run = %v, want the kill refused", err)
	}
}
