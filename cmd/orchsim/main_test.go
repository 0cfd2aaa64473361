package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"orch.io/orch/sim/scenario"
)

func orchsim(t *testing.T, args ...string) (string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(args, &out, &errOut)
	return out.String() + errOut.String(), code
}

// run --update writes the golden, run matches it, a changed golden fails with a diff, --seed
// checks only the expectations, list shows the rules and report writes the markdown.
func TestCommands(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "file-source-frequency.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	yaml := filepath.Join(dir, "freq.yaml")
	if err := os.WriteFile(yaml, src, 0o644); err != nil {
		t.Fatal(err)
	}

	if out, code := orchsim(t, "run", dir); code != 1 || !strings.Contains(out, "golden trace") {
		t.Fatalf("run without golden: %d %s", code, out)
	}
	if out, code := orchsim(t, "run", "--update", dir); code != 0 || !strings.HasPrefix(out, "updated freq ") {
		t.Fatalf("run --update: %d %s", code, out)
	}
	if out, code := orchsim(t, "run", yaml); code != 0 || !strings.HasPrefix(out, "ok   freq ") {
		t.Fatalf("run: %d %s", code, out)
	}
	golden := filepath.Join(dir, "freq.trace")
	g, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(golden, bytes.Replace(g, []byte("00:01:30.000"), []byte("00:01:20.000"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := orchsim(t, "run", yaml)
	if code != 1 || !strings.Contains(out, "FAIL freq") || !strings.Contains(out, "- 00:01:20.000 node-a source file read") || !strings.Contains(out, "+ 00:01:30.000 node-a source file read") {
		t.Fatalf("run with a changed golden: %d %s", code, out)
	}
	if out, code := orchsim(t, "run", "--seed", "7", yaml); code != 0 || !strings.Contains(out, "seed 7") {
		t.Fatalf("run --seed 7: %d %s", code, out)
	}
	if out, code := orchsim(t, "list", dir); code != 0 || !strings.Contains(out, "freq\t1m40s\tWith --file-check-frequency=45s") || !strings.Contains(out, "\t- --file-check-frequency") {
		t.Fatalf("list: %d %s", code, out)
	}
	report := filepath.Join(dir, "reports", "scenarios.md")
	out, code = orchsim(t, "report", "--out", report, dir)
	if code != 1 || !strings.Contains(out, "0 of 1 scenarios pass") {
		t.Fatalf("report: %d %s", code, out)
	}
	md, err := os.ReadFile(report)
	if err != nil || !strings.Contains(string(md), "## freq") || !strings.Contains(string(md), "**fail**") {
		t.Fatalf("report file: %v\n%s", err, md)
	}
	if out, code := orchsim(t, "bogus"); code != 2 || !strings.Contains(out, "unknown command") {
		t.Fatalf("bogus: %d %s", code, out)
	}
}

// compare prints what differs and each run's outcome; it refuses a second file, a bad sweep and a
// misspelt option before running anything.
func TestCompare(t *testing.T) {
	leak := filepath.Join("..", "..", "scenarios", "eviction-memory-leak-hard.yaml")
	out, code := orchsim(t, "compare", "--sweep", "eviction-hard=memory.available<100Mi,300Mi", leak)
	if code != 0 || !strings.Contains(out, "run 3 parts from run 1 at trace line 730:") || !strings.Contains(out, "outcome of each run:") {
		t.Fatalf("compare --sweep: %d\n%s", code, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"compare", "--with", "max-pods=5", leak, leak}, "name one scenario file"},
		{[]string{"compare", "--sweep", "max-pods=5", leak}, "a sweep takes two values or more"},
		{[]string{"compare", "--with", "max-pod=5", leak}, "unknown flag: --max-pod"},
		{[]string{"compare", "--with", "max-pods", leak}, `option "max-pods": want name=value`},
	} {
		if out, code := orchsim(t, tc.args...); code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("%q: %d %s, want 2 and %q", tc.args, code, out, tc.want)
		}
	}
}

// report --html writes an index and a page per scenario; compare --html writes the runs overlaid.
func TestHTML(t *testing.T) {
	dir := t.TempDir()
	leak := filepath.Join("..", "..", "scenarios", "eviction-memory-leak-hard.yaml")
	if out, code := orchsim(t, "report", "--html", dir, leak); code != 0 || !strings.Contains(out, "1 of 1 scenarios pass") {
		t.Fatalf("report --html: %d %s", code, out)
	}
	index, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil || !strings.Contains(string(index), `<a href="eviction-memory-leak-hard.html">eviction-memory-leak-hard</a>`) {
		t.Fatalf("index.html (%v):\n%s", err, index)
	}
	page, err := os.ReadFile(filepath.Join(dir, "eviction-memory-leak-hard.html"))
	if err != nil || !strings.Contains(string(page), `data-pod="default/leaker" data-run="1" data-at="00:06:00.000"`) {
		t.Fatalf("the scenario's page (%v) lacks leaker's eviction", err)
	}
	out, code := orchsim(t, "compare", "--html", dir, "--with", "eviction-hard=memory.available<300Mi", leak)
	if code != 0 || !strings.Contains(out, "plots: "+filepath.Join(dir, "eviction-memory-leak-hard-compare.html")) {
		t.Fatalf("compare --html: %d %s", code, out)
	}
	page, err = os.ReadFile(filepath.Join(dir, "eviction-memory-leak-hard-compare.html"))
	if err != nil || !strings.Contains(string(page), `data-pod="default/leaker" data-run="2" data-at="00:04:20.000"`) {
		t.Fatalf("the compare page (%v) lacks run 2's eviction of leaker", err)
	}
}

// new writes a skeleton that run --update then replays; it will not overwrite one.
func TestNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mine.yaml")
	if out, code := orchsim(t, "new", path); code != 0 || !strings.HasPrefix(out, "wrote "+path) {
		t.Fatalf("new: %d %s", code, out)
	}
	if out, code := orchsim(t, "run", "--update", path); code != 0 || !strings.HasPrefix(out, "updated mine ") {
		t.Fatalf("run --update on the skeleton: %d %s", code, out)
	}
	if out, code := orchsim(t, "new", path); code != 2 || !strings.Contains(out, "already exists") {
		t.Fatalf("new over a file: %d %s", code, out)
	}
	if out, code := orchsim(t, "new"); code != 2 || !strings.Contains(out, "name the file to write") {
		t.Fatalf("new without a file: %d %s", code, out)
	}
}

// compare --at replays the scenario with orchsim built at a commit (here a stand-in already in the
// cache for HEAD, printing what this build replays): it is handed a copy keeping every line, its
// trace is read back and lined up beside the others; a name that is no commit is refused.
func TestCompareAt(t *testing.T) {
	cache := t.TempDir()
	t.Setenv("ORCHSIM_AT_CACHE", cache)
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skip("not in a git checkout: ", err)
	}
	leak := filepath.Join("..", "..", "scenarios", "eviction-memory-leak-hard.yaml")
	s, err := scenario.Load(leak)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.RunWith(scenario.RunOptions{Full: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, strings.TrimSpace(string(head)))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	trace := filepath.Join(dir, "trace")
	if err := os.WriteFile(trace, []byte(r.Trace+"FAIL eviction-memory-leak-hard\n  golden trace: missing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	given := filepath.Join(dir, "given.yaml")
	script := "#!/bin/sh\n[ \"$1 $2\" = 'run --trace' ] || exit 2\ncp \"$3\" " + given + "\ncat " + trace + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "orchsim"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	out, code := orchsim(t, "compare", "--at", "HEAD", "--with", "eviction-hard=memory.available<300Mi", leak)
	hash := strings.TrimSpace(string(head))[:12]
	for _, want := range []string{"run 2: as written, orchsim at " + hash + " (1341 trace lines)", "run 2's trace is the same as run 1's", "run 3 parts from run 1 at trace line 730:"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("compare --at: %d, no %q in\n%s", code, want, out)
		}
	}
	copied, err := os.ReadFile(given)
	if err != nil || strings.Contains(string(copied), "omit") || !strings.Contains(string(copied), "seed: 1\n") {
		t.Errorf("the copy handed over (%v) keeps omit or lacks the seed:\n%s", err, copied)
	}
	if out, code := orchsim(t, "compare", "--at", "no-such-commit", leak); code != 2 || !strings.Contains(out, "--at no-such-commit: not a commit") {
		t.Errorf("compare --at no-such-commit: %d %s", code, out)
	}
	if out, code := orchsim(t, "compare", leak); code != 2 || !strings.Contains(out, "name something to try") {
		t.Errorf("compare with nothing to try: %d %s", code, out)
	}
}
