package scenario

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"orch.io/orch/sim"
)

func TestParseSweep(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		err  string
	}{
		{in: "eviction-hard=memory.available<100Mi,200Mi,300Mi", want: []string{
			"--eviction-hard=memory.available<100Mi", "--eviction-hard=memory.available<200Mi", "--eviction-hard=memory.available<300Mi"}},
		{in: "--image-gc-high-threshold=70,90", want: []string{"--image-gc-high-threshold=70", "--image-gc-high-threshold=90"}},
		{in: "eviction-hard=memory.available<1Mi,nodefs.available<10%,20%", want: []string{
			"--eviction-hard=memory.available<1Mi", "--eviction-hard=nodefs.available<10%", "--eviction-hard=nodefs.available<20%"}},
		{in: "image-gc-high-threshold=70", err: "two values or more"},
		{in: "image-gc-high-threshold", err: "want name=value1,value2"},
		{in: "image-gc-high-threshold=70,,80", err: "an empty value"},
	} {
		sets, err := ParseSweep(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one containing %q", tc.in, err, tc.err)
			}
			continue
		}
		var got []string
		for _, s := range sets {
			if len(s.Args) != 1 || s.Name != s.Args[0] {
				t.Errorf("%s: set %+v, want one option named for itself", tc.in, s)
			}
			got = append(got, s.Args...)
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestParseOptionSet(t *testing.T) {
	for _, tc := range []struct {
		in, err string
		want    []string
	}{
		{in: "eviction-hard=memory.available<300Mi  --eviction-pressure-transition-period=2m",
			want: []string{"--eviction-hard=memory.available<300Mi", "--eviction-pressure-transition-period=2m"}},
		{in: "--serialize-image-pulls", err: `option "--serialize-image-pulls": want name=value`},
		{in: "  ", err: "at least one option"},
	} {
		set, err := ParseOptionSet(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(set.Args, tc.want) || set.Name != strings.Join(tc.want, " ") {
			t.Errorf("%q: %+v, %v; want %q", tc.in, set, err, tc.want)
		}
	}
}

// A set's option replaces the node's option of the same name, wherever it stood; the others stay.
func TestWithArgs(t *testing.T) {
	n := Node{Name: "a", Args: []string{"--eviction-hard=memory.available<100Mi", "--pod-manifest-path=/m", "--eviction-hard=nodefs.available<1%", "--max-pods", "7", "--kernel-memcg-notification"}}
	got := n.withArgs([]string{"--eviction-hard=memory.available<300Mi", "--max-pods=5"}).Args
	want := []string{"--pod-manifest-path=/m", "--kernel-memcg-notification", "--eviction-hard=memory.available<300Mi", "--max-pods=5"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("withArgs: %q, want %q", got, want)
	}
	if len(n.Args) != 6 {
		t.Errorf("withArgs changed the scenario's own node: %q", n.Args)
	}
}

func TestSummarize(t *testing.T) {
	s := func(sec int) time.Duration { return time.Duration(sec) * time.Second }
	entries := []sim.Entry{
		{At: s(0), Node: "n", Kind: sim.KindCRI, Text: "PullImage image=a -> OK sha256:1"},
		{At: s(0), Node: "n", Kind: sim.KindCRI, Text: "PullImage image=b -> DeadlineExceeded"},
		{At: s(1), Node: "n", Kind: sim.KindPod, Text: "default/web Pending app=waiting(ContainerCreating)"},
		{At: s(2), Node: "n", Kind: sim.KindPod, Text: "default/web Running app=running"},
		{At: s(2), Node: "n", Kind: sim.KindPod, Text: "default/probed Running Ready=False app=running,ready=false"},
		{At: s(5), Node: "n", Kind: sim.KindPod, Text: "default/probed Running Ready=True app=running,ready=true"},
		{At: s(10), Node: "n", Kind: sim.KindNode, Text: "conditions MemoryPressure"},
		{At: s(10), Node: "n", Kind: sim.KindEvent, Text: "create Warning Evicted default/web: The node was low on resource: memory."},
		{At: s(10), Node: "n", Kind: sim.KindPod, Text: "default/web Failed reason=Evicted app=terminated(Completed,0)"},
		{At: s(10), Node: "n", Kind: sim.KindAPI, Text: "patch pods/status default/web -> 200 Failed reason=Evicted"},
		{At: s(10), Node: "api", Kind: sim.KindAPI, Text: "create pods default/late -> 201"},
		{At: s(12), Node: "n", Kind: sim.KindPod, Text: "default/probed Running Ready=True app=running,restarts=1,ready=true side=waiting(CrashLoopBackOff),restarts=2"},
		{At: s(14), Node: "n", Kind: sim.KindPod, Text: "default/probed Running Ready=True app=running,restarts=1,ready=true side=running,restarts=2"},
		{At: s(20), Node: "n", Kind: sim.KindNode, Text: "conditions MemoryPressure,DiskPressure"},
		{At: s(30), Node: "n", Kind: sim.KindNode, Text: "conditions none"},
		{At: s(31), Node: "n", Kind: sim.KindEvent, Text: "update Warning BackOff default/probed spec.containers{side}: Back-off (series count 2)"},
		{At: s(31), Node: "n", Kind: sim.KindEvent, Text: "dropped 3 occurrences of BackOff"},
		{At: s(35), Node: "n", Kind: sim.KindCRI, Text: "RemoveImage image=sha256:1 -> OK sha256:1 a size=1"},
		{At: s(36), Node: "n", Kind: sim.KindPod, Text: "default/web gone"},
	}
	got := Summarize(entries, s(40))
	want := Summary{Lines: len(entries),
		Nodes: []NodeSummary{{Node: "n", Pressure: map[string]time.Duration{"MemoryPressure": s(20), "DiskPressure": s(10)},
			ImagesPulled: 1, ImagesRemoved: 1, Requests: map[string]int{"patch pods/status": 1},
			Events: map[string]int{"Evicted": 1, "BackOff": 1}}},
		Pods: []PodSummary{
			// Ready 5s..12s and 14s..40s: the crash-looping side car is not running in between.
			{Node: "n", Pod: "default/probed", Restarts: 3, Ready: s(7 + 26), Final: "Running Ready=True app=running,restarts=1,ready=true side=running,restarts=2"},
			{Node: "n", Pod: "default/web", Evicted: []time.Duration{s(10)}, Ready: s(8), Final: "gone"},
		}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Summarize:\n got %+v\nwant %+v", got, want)
	}
}

// Compare on shipped scenarios: what a sweep of the hard threshold changes in a memory leak, what
// a later image GC threshold changes on one node of three, and nothing at all for an option the
// scenario does not exercise.
func TestCompareScenarios(t *testing.T) {
	for _, tc := range []struct {
		file, sweep, with, node string
		want                    []string // lines of CompareText and SweepTable, their spaces squeezed
	}{
		{file: "eviction-memory-leak-hard.yaml", sweep: "eviction-hard=memory.available<100Mi,300Mi", want: []string{
			"run 2: --eviction-hard=memory.available<100Mi (1341 trace lines)",
			"pod default/leaker on node-a",
			"evicted at 00:06:00.000 00:06:00.000 00:04:20.000",
			"evicted at 00:06:30.000 00:06:30.000 never",
			"run 2's trace is the same as run 1's",
			"run 3 parts from run 1 at trace line 730:",
			"run 3: 00:04:20.000 node-a node conditions MemoryPressure",
			"--eviction-hard=memory.available<300Mi 1 00:04:20.000 0 1m1s 2 0 105 17 default/leaker",
		}},
		{file: "eviction-memory-leak-hard.yaml", with: "eviction-hard=memory.available<300Mi eviction-pressure-transition-period=3m", want: []string{
			"time under MemoryPressure 1m1s 3m1s",
		}},
		{file: "image-gc-thresholds.yaml", sweep: "image-gc-high-threshold=60,90", node: "node-c", want: []string{
			"node node-c",
			"events ImageGCFailed 2 2 1",
			"run 3 parts from run 1 at trace line 3892:",
		}},
		{file: "crash-loop-backoff.yaml", with: "eviction-hard=memory.available<1Mi", want: []string{
			"nothing: every node and pod figure is the same in every run",
			"run 2's trace is the same as run 1's",
		}},
	} {
		s, err := Load(filepath.Join("..", "..", "scenarios", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		var sets []OptionSet
		if tc.sweep != "" {
			if sets, err = ParseSweep(tc.sweep); err != nil {
				t.Fatal(err)
			}
		}
		if tc.with != "" {
			set, err := ParseOptionSet(tc.with)
			if err != nil {
				t.Fatal(err)
			}
			sets = append(sets, set)
		}
		runs, err := s.Compare(CompareOptions{Sets: sets, Node: tc.node})
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		out := CompareText(s, runs) + SweepTable(runs)
		lines := strings.Split(out, "\n")
		for _, w := range tc.want {
			found := false
			for _, l := range lines {
				found = found || strings.Join(strings.Fields(l), " ") == w
			}
			if !found {
				t.Errorf("%s %s%s: no line %q in\n%s", tc.file, tc.sweep, tc.with, w, out)
			}
		}
	}
}

// Options are refused by name before anything runs: a misspelt one, one the others contradict,
// and a node the scenario lacks.
func TestCompareRefusals(t *testing.T) {
	s, err := Load(filepath.Join("..", "..", "scenarios", "image-gc-thresholds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	set := func(v string) []OptionSet {
		o, err := ParseOptionSet(v)
		if err != nil {
			t.Fatal(err)
		}
		return []OptionSet{o}
	}
	for _, tc := range []struct {
		o    CompareOptions
		want string
	}{
		{CompareOptions{Sets: set("eviction-hrad=memory.available<1Mi")}, "run 2 (--eviction-hrad=memory.available<1Mi): node node-a: unknown flag: --eviction-hrad"},
		{CompareOptions{Sets: set("image-gc-high-threshold=60")}, "run 2 (--image-gc-high-threshold=60): node node-a: --image-gc-low-threshold (imageGCLowThresholdPercent): 80 must be less than --image-gc-high-threshold"},
		{CompareOptions{Sets: set("max-pods=5"), Node: "node-z"}, `--node: the scenario has no node "node-z"`},
	} {
		if _, err := s.Compare(tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.o, err, tc.want)
		}
	}
}

// A replay's trace read back from text is the entries it was written from.
func TestParseTrace(t *testing.T) {
	s, err := Load(filepath.Join("..", "..", "scenarios", "image-gc-thresholds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.RunWith(RunOptions{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	entries, text := ParseTrace("ok   image-gc-thresholds\n" + r.Trace + "  a problem\n")
	if text != r.Trace || len(entries) != len(r.Entries) {
		t.Fatalf("%d entries and %d bytes read back, want %d and %d", len(entries), len(text), len(r.Entries), len(r.Trace))
	}
	for i, e := range entries {
		w := r.Entries[i]
		if e.At != w.At || e.Node != w.Node || e.Kind != w.Kind || e.Text != w.Text {
			t.Fatalf("entry %d: %+v, want %+v", i, e, w)
		}
	}
	run, err := TraceRun(s, "elsewhere", 1, r.Trace)
	if err != nil || !reflect.DeepEqual(run.Summary, Summarize(r.Entries, s.Duration.D())) {
		t.Errorf("TraceRun: %v, a summary other than the replay's", err)
	}
	if _, err := TraceRun(s, "elsewhere", 1, "FAIL x\n"); err == nil {
		t.Error("a run without trace lines was accepted")
	}
}
