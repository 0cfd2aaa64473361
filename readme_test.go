// Package orch_test holds the repository's own checks: the import rules of ARCHITECTURE.md, and the
// README's test: README.md's shell blocks run in order, as a reader runs them, so the page cannot
// drift from the programs it describes.
//
// A fenced block's info string says what the block is. `sh` is a command the reader runs in their
// shell, after the blocks before it; words after the language qualify it:
//
//	background     started in a shell of its own and left running, as `make run` is
//	after-ctrl-c   first stop every background command with Ctrl-C, as the page asks
//	skip=<why>     not run here: ci (.ci/run runs it), long (minutes to hours, or root
//	               and Debian packages), example (the reader's own machines and files)
//
// Any other language (text, yaml, json, go) is something to read, not to run; a fence without one
// fails, as does a shell block whose marks the test does not know.
package orch_test

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

var runREADME = flag.Bool("readme", false, "run README.md's shell blocks as a reader would (make readme)")

// block is one fenced block of a page.
type block struct {
	line  int // of the opening fence
	lang  string
	marks []string
	body  string
}

func (b block) shell() bool {
	switch b.lang {
	case "sh", "bash", "shell", "console", "zsh":
		return true
	}
	return false
}

func (b block) marked(mark string) bool {
	for _, m := range b.marks {
		if m == mark {
			return true
		}
	}
	return false
}

// skip is why a shell block is not run, or "".
func (b block) skip() string {
	for _, m := range b.marks {
		if why, ok := strings.CutPrefix(m, "skip="); ok {
			return why
		}
	}
	return ""
}

var fence = regexp.MustCompile("^( *)(`{3,}|~{3,})(.*)$")

// fences reads a Markdown page's fenced blocks.
func fences(text string) ([]block, error) {
	var blocks []block
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, open, info := len(m[1]), m[2], strings.Fields(m[3])
		b := block{line: i + 1}
		if len(info) > 0 {
			b.lang, b.marks = info[0], info[1:]
		}
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			if c := fence.FindStringSubmatch(lines[i]); c != nil && c[2][0] == open[0] && len(c[2]) >= len(open) && strings.TrimSpace(c[3]) == "" {
				closed = true
				break
			}
			l := lines[i]
			for n := 0; n < indent && strings.HasPrefix(l, " "); n++ {
				l = l[1:]
			}
			body = append(body, l)
		}
		if !closed {
			return nil, fmt.Errorf("line %d: the block never closes", b.line)
		}
		b.body = strings.Join(body, "\n")
		blocks = append(blocks, b)
	}
	return blocks, nil
}

var skipReasons = map[string]bool{"ci": true, "long": true, "example": true}

// checkMarks fails t for each block of README.md the test could not place: no language, a
// console block (commands and output mixed), marks it does not know, or a skip=ci block whose
// command .ci/run does not run.
func checkMarks(t *testing.T, blocks []block, ciRun string) {
	t.Helper()
	ci := map[string]bool{}
	for _, l := range strings.Split(ciRun, "\n") {
		ci[strings.TrimSpace(l)] = true
	}
	for _, b := range blocks {
		switch {
		case b.lang == "":
			t.Errorf("README.md:%d: a block without a language: say what it holds (sh to run, text, yaml, ...)", b.line)
			continue
		case b.lang == "console":
			t.Errorf("README.md:%d: a console block mixes commands and output: sh for the commands, text for the output", b.line)
			continue
		case !b.shell():
			continue
		}
		for _, m := range b.marks {
			why, skip := strings.CutPrefix(m, "skip=")
			switch {
			case m == "background", m == "after-ctrl-c":
			case skip && skipReasons[why]:
			default:
				t.Errorf("README.md:%d: shell block marked %q: the test runs a shell block unless it is marked skip=ci, skip=long or skip=example, and knows background and after-ctrl-c besides", b.line, m)
			}
		}
		if b.skip() == "ci" {
			for _, c := range commands(t, b) {
				if line := uncomment(c.text); !ci[line] {
					t.Errorf("README.md:%d: %q is marked skip=ci but .ci/run does not run it", c.line, line)
				}
			}
		}
	}
}

// command is one complete shell command of a block, heredocs and continuation lines included.
type command struct {
	line int
	text string
}

// firstLine is what names a command: its first line without a trailing comment.
func (c command) firstLine() string { return uncomment(strings.SplitN(c.text, "\n", 2)[0]) }

var trailingComment = regexp.MustCompile(`\s+#\s.*$`)

func uncomment(line string) string {
	return strings.TrimSpace(trailingComment.ReplaceAllString(line, ""))
}

// commands splits a shell block into complete commands, as a reader types them one at a time:
// bash decides where one ends (an open quote, a heredoc or a trailing backslash goes on).
func commands(t *testing.T, b block) []command {
	t.Helper()
	var out []command
	var cur []string
	start := 0
	for i, l := range strings.Split(b.body, "\n") {
		if len(cur) == 0 {
			if s := strings.TrimSpace(l); s == "" || strings.HasPrefix(s, "#") {
				continue
			}
			start = b.line + 1 + i
		}
		cur = append(cur, l)
		text := strings.Join(cur, "\n")
		if strings.HasSuffix(l, "\\") || !complete(t, text) {
			continue
		}
		out = append(out, command{line: start, text: text})
		cur = nil
	}
	if len(cur) > 0 {
		t.Errorf("README.md:%d: the block ends inside a command: %s", start, strings.Join(cur, "\n"))
	}
	return out
}

func complete(t *testing.T, text string) bool {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("bash", "-n")
	cmd.Stdin, cmd.Stderr = strings.NewReader(text+"\n"), &stderr
	err := cmd.Run()
	return err == nil && !strings.Contains(stderr.String(), "here-document")
}

// promise is what the page says a command prints. A command no promise names need only succeed.
type promise struct {
	command string   // the first line of the commands it is about (a prefix, ending at a word)
	want    []string // in its output; for a background command, what it prints once ready
	not     []string // never in its output
	exit    int      // its exit status
	again   bool     // racing the agent: run again until the output shows want, up to a minute
	check   func(t *testing.T, page, out string)
	used    bool
}

func (p *promise) about(c command) bool {
	first := c.firstLine()
	return first == p.command || strings.HasPrefix(first, p.command+" ")
}

// stopped is what a Ctrl-C'd program must never print, whatever it is.
var stopped = []string{"Segmentation fault", "panic:", "DATA RACE"}

func promises() []*promise {
	return []*promise{
		{command: "make run", want: []string{"orch is up"}, not: []string{"has been deprecated", "make: ***", "Registering the node failed"}},
		{command: "kubectl get nodes -o wide", want: []string{" Ready ", "fakecri://"}, again: true},
		{command: "kubectl get namespaces", want: []string{"default", "orch-system", "orch-public", "orch-node-lease"}},
		{command: "kubectl get leases -A", want: []string{"orch-node-lease"}},
		{command: "kubectl apply -f - <<POD", want: []string{"pod/web created"}},
		{command: "kubectl wait --for=condition=Ready pod/web", want: []string{"pod/web condition met"}},
		{command: "kubectl get pods -o wide", want: []string{"web", "Running"}},
		{command: "kubectl get events", want: []string{"Pulling", "Pulled", "Created", "Started"}},
		{command: "kubectl describe pod web", want: []string{"Events:", "Started container app"}, not: []string{"Events:  <none>"}},
		{command: "kubectl exec web -- echo hello", want: []string{"hello"}},
		{command: "curl -sk https://127.0.0.1:10250/pods", want: []string{"Unauthorized"}, not: []string{"PodList"}},
		{command: "kubectl delete pod web", want: []string{`pod "web" deleted`}},
		{command: "curl -sS --cacert orch-data/pki/apiserver.crt https://127.0.0.1:6443/version", want: []string{`"code": 401`, "Unauthorized"}},
		{command: "ocurl $API", want: []string{"APIResourceList", `"events"`}},
		{command: `ocurl "https://127.0.0.1:6443/readyz?verbose"`, want: []string{"[+]etcd ok", "readyz check passed"}},
		{command: "ocurl https://127.0.0.1:6443/version", want: []string{"gitVersion"}},
		{command: "ocurl https://127.0.0.1:6443/metrics", want: []string{"apiserver_request_total{"}},
		{command: "ocurl -i -X POST $API/namespaces/default/events", want: []string{"HTTP/2 201", `"name": "web-0.pulled"`}},
		{command: "ocurl -i $API/namespaces/default/events/web-0.pulled", want: []string{"HTTP/2 200"}},
		{command: `ocurl "$API/events"`, want: []string{"EventList", "web-0.pulled"}},
		{command: `ocurl "$API/namespaces/default/events?limit=10"`, want: []string{"EventList", "web-0.pulled"}},
		{command: `ocurl "$API/namespaces/default/events?labelSelector=app%3Dweb&fieldSelector=type%3DNormal"`, want: []string{"web-0.pulled"}},
		{command: "ocurl -X PATCH $API/namespaces/default/events/web-0.pulled", want: []string{`"count": 2`}},
		{command: `ocurl -N "$API/namespaces/default/events?watch=true&allowWatchBookmarks=true&timeoutSeconds=5"`, want: []string{`{"type":"ADDED"`, "web-0.pulled"}},
		{command: `ocurl -X POST "$API/namespaces/default/events?dryRun=All"`, want: []string{`"code": 422`, `"reason": "Invalid"`, `"field": "reportingController"`}},
		{command: "ocurl -X DELETE $API/namespaces/default/events/web-0.pulled", want: []string{`"status": "Success"`}},
		{command: `ocurl -X DELETE "$API/namespaces/default/events?labelSelector=app%3Dweb"`, want: []string{"EventList"}},
		{command: "kubectl explain events --api-version=events.orch.io/v1", want: []string{"GROUP:      events.orch.io", "KIND:", "Event", "FIELDS:"}},
		{command: "kubectl apply --server-side -f orch-data/event.yaml", want: []string{"event.events.orch.io/web-1.started serverside-applied"}},
		{command: "kubectl get -f orch-data/event.yaml --show-managed-fields -o yaml", want: []string{"managedFields:", "manager: kubectl", "operation: Apply"}},
		{command: "sed 's/app: web/app: shop/' orch-data/event.yaml | kubectl apply --server-side --field-manager=ops -f -", exit: 1, want: []string{`conflict with "kubectl"`, ".metadata.labels.app"}},
		{command: "sed 's/app: web/app: shop/' orch-data/event.yaml | kubectl apply --server-side --field-manager=ops --force-conflicts -f -", want: []string{"serverside-applied"}},
		{command: "kubectl get events.events.orch.io -A", want: []string{"pod/web-1", "Started container app"}},
		{command: "bin/orch-apiserver --token-auth-file orch-data/my-tokens.csv", want: []string{`"Serving securely"`}},
		{command: "curl -sS --cacert orch-data/pki/apiserver.crt https://127.0.0.1:6443/api/v1/namespaces", want: []string{"NamespaceList", "orch-node-lease"}},
		{command: "kubectl config set-context mine --cluster mine --user me", want: []string{`Switched to context "mine"`}},
		{command: "kubectl create rolebinding jane-view --clusterrole=view --user=jane --namespace default", want: []string{"rolebinding.rbac.authorization.k8s.io/jane-view created"}},
		{command: "kubectl --context jane auth can-i list pods", want: []string{"yes"}, again: true},
		{command: "kubectl --context jane auth can-i delete pods", want: []string{"no"}, exit: 1},
		{command: "kubectl --context jane get secrets", want: []string{`User "jane" cannot list resource "secrets"`}, exit: 1},
		{command: "kubectl --context jane get pods --namespace orch-system", want: []string{`cannot list resource "pods" in API group "" in the namespace "orch-system"`}, exit: 1},
		{command: "kubectl --context jane auth can-i --list", want: []string{"pods/log", "selfsubjectaccessreviews.authorization.orch.io", "[/healthz]"}, not: []string{"secrets"}},
		{command: "kubectl --context jane auth whoami", want: []string{"Username    jane", "system:authenticated"}},
		{command: "make coverage", check: coverageAsTheReadmeSays},
		{command: "go run ./cmd/fakecri --listen unix:///tmp/fakecri.sock", want: []string{"CRI on unix:///tmp/fakecri.sock"}},
		{command: "go run ./cmd/orchlet --config /tmp/orchlet.yaml", want: []string{"orchlet started"}, not: []string{"has been deprecated"}},
		{command: "curl -sS http://127.0.0.1:10255/pods", want: []string{`"name":"web-`, `"phase":"Running"`}, again: true},
	}
}

// coverageAsTheReadmeSays holds the page's rule counts to what make coverage prints.
func coverageAsTheReadmeSays(t *testing.T, page, out string) {
	t.Helper()
	said := regexp.MustCompile(`\((\d+) of (\d+) covered, (\d+) pending\)`).FindStringSubmatch(page)
	total := regexp.MustCompile(`catalogs every testable statement of SPEC\.md \((\d+) rules\)`).FindStringSubmatch(page)
	got := regexp.MustCompile(`(?m)^\s*all\s+(\d+)\s+(\d+)\s+(\d+)\s*$`).FindStringSubmatch(out)
	if said == nil || total == nil || got == nil {
		t.Errorf("make coverage: cannot compare the page's counts (%q, %q) with its output:\n%s", said, total, out)
		return
	}
	if said[1] != got[1] || said[3] != got[2] || said[2] != got[3] || total[1] != got[3] {
		t.Errorf("README.md says %s of %s rules covered, %s pending (and %s rules); make coverage prints %s covered, %s pending of %s",
			said[1], said[2], said[3], total[1], got[1], got[2], got[3])
	}
}

// TestREADMEMarksEveryBlock runs with the unit tests: every block of README.md says what it is,
// and the commands it leaves to CI are in .ci/run.
func TestREADMEMarksEveryBlock(t *testing.T) {
	page, blocks := readPage(t)
	ciRun, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	checkMarks(t, blocks, string(ciRun))
	if !strings.Contains(page, "```sh background\nmake run") || !strings.Contains(page, "```sh skip=ci\nmake test") {
		t.Error("README.md opens with make run and make test")
	}
	var run []command
	for _, b := range blocks {
		if b.shell() && b.skip() == "" {
			run = append(run, commands(t, b)...)
		}
	}
	for _, p := range promises() {
		for _, c := range run {
			if p.about(c) {
				p.used = true
			}
		}
		if !p.used {
			t.Errorf("no command of README.md is %q any more: the promise about it is stale", p.command)
		}
	}
}

var issueNumber = regexp.MustCompile(`(?i)\bissues? #?[0-9]+`)

// TestNoIssueNumbersForUsers: a user's page, a help text or a tool's output says what a figure or
// target is, never the issue that asked for it (reports/ keeps the history, with its numbers).
func TestNoIssueNumbersForUsers(t *testing.T) {
	files := []string{"README.md", "features/README.md", "scenarios/README.md", "fakecri/README.md", "reports/README.md"}
	for _, glob := range []string{"docs/*.md", "cmd/*/*.go", "cmd/*/*/*.go"} {
		m, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range strings.Split(string(data), "\n") {
			if issueNumber.MatchString(l) {
				t.Errorf("%s:%d: %s", f, i+1, strings.TrimSpace(l))
			}
		}
	}
	makefile, err := os.ReadFile("Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range strings.Split(string(makefile), "\n") {
		if strings.HasPrefix(l, "##") && issueNumber.MatchString(l) {
			t.Errorf("Makefile:%d: %s", i+1, l)
		}
	}
}

func readPage(t *testing.T) (string, []block) {
	t.Helper()
	data, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := fences(string(data))
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	return string(data), blocks
}

// TestREADME runs README.md's shell blocks in order in a copy of this checkout, as a reader would
// in a fresh clone: one shell for the commands, one more for each background command, Ctrl-C
// where the page says to stop them. Each command must succeed (or fail as its promise says) and
// print what the page promises.
func TestREADME(t *testing.T) {
	if !*runREADME {
		t.Skip("make readme runs it: it needs ports 6443, 10248, 10250 and 10255, and builds kubectl")
	}
	page, blocks := readPage(t)
	ciRun, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	checkMarks(t, blocks, string(ciRun))
	if t.Failed() {
		t.FailNow()
	}
	for _, port := range []int{6443, 10248, 10250, 10255} {
		l, err := net.Listen("tcp", ":"+strconv.Itoa(port))
		if err != nil {
			t.Fatalf("port %d is taken (is make run or an orchlet running?): the page's servers need it: %v", port, err)
		}
		l.Close()
	}
	dir := copyCheckout(t)
	t.Logf("running README.md's blocks in %s", dir)
	r := startReader(t, dir)
	defer r.stop()
	all := promises()
	start := time.Now()
	for _, b := range blocks {
		if !b.shell() || b.skip() != "" {
			continue
		}
		if b.marked("after-ctrl-c") {
			r.ctrlC()
		}
		for _, c := range commands(t, b) {
			var p *promise
			for _, q := range all {
				if q.about(c) {
					p = q
					q.used = true
				}
			}
			if p == nil {
				p = &promise{}
			}
			began := time.Now()
			if b.marked("background") {
				r.background(c, p)
			} else {
				r.run(c, p, page)
			}
			t.Logf("README.md:%d: %s (%.1fs)", c.line, c.firstLine(), time.Since(began).Seconds())
			if t.Failed() {
				t.FailNow()
			}
		}
	}
	r.ctrlC()
	for _, p := range all {
		if !p.used {
			t.Errorf("no command of README.md is %q any more: the promise about it is stale", p.command)
		}
	}
	t.Logf("README.md's blocks ran in %s", time.Since(start).Round(time.Second))
}

// copyCheckout copies what a clone of this checkout would hold (tracked files and new ones not
// ignored, as they are now) to a directory of its own, so the page's orch-data and bin/ are fresh
// and the checkout's own are left alone.
func copyCheckout(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "orch")
	for _, name := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		info, err := os.Lstat(name)
		if os.IsNotExist(err) {
			continue // deleted, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		to := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			t.Fatal(err)
		}
		if info.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, to); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, data, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// reader is the person following the page: a shell for the commands, and the shells left
// running in the background.
type reader struct {
	t       *testing.T
	dir     string
	scripts string
	env     []string
	shell   *exec.Cmd
	in      io.WriteCloser
	lines   chan string
	n       int
	running []*backgroundCommand
}

type backgroundCommand struct {
	c    command
	p    *promise
	cmd  *exec.Cmd
	log  string // its output, written by it and read by the test
	done chan struct{}
}

func (bc *backgroundCommand) output() string {
	data, _ := os.ReadFile(bc.log)
	return string(data)
}

func startReader(t *testing.T, dir string) *reader {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			env = append(env, kv)
		}
	}
	r := &reader{t: t, dir: dir, scripts: t.TempDir(), env: env, lines: make(chan string, 1024)}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.shell = exec.Command("bash", "--noprofile", "--norc")
	r.shell.Dir, r.shell.Env = dir, env
	r.shell.Stdout, r.shell.Stderr = pw, pw
	r.shell.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if r.in, err = r.shell.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := r.shell.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	go func() {
		s := bufio.NewScanner(pr)
		s.Buffer(make([]byte, 1<<20), 1<<24)
		for s.Scan() {
			r.lines <- s.Text()
		}
		close(r.lines)
	}()
	// Stricter than a reader's shell in one way: a pipeline fails when any of its commands does.
	fmt.Fprintln(r.in, "set -o pipefail")
	return r
}

// timeout is how long a command may take: building kubectl from cold is the longest.
func timeout(c command) time.Duration {
	switch first := c.firstLine(); {
	case first == "make kubectl", first == "make run":
		return 15 * time.Minute
	case strings.HasPrefix(first, "make "), strings.HasPrefix(first, "go run "):
		return 5 * time.Minute
	}
	return 2 * time.Minute
}

// run types c into the reader's shell and holds its output and exit status to p.
func (r *reader) run(c command, p *promise, page string) {
	t := r.t
	deadline := time.Now().Add(time.Minute)
	for {
		out, exit := r.exec(c)
		missing := p.missing(out)
		if p.again && (exit != p.exit || len(missing) > 0) && time.Now().Before(deadline) {
			time.Sleep(2 * time.Second)
			continue
		}
		if exit != p.exit {
			t.Errorf("README.md:%d: %s: exit status %d, want %d; it printed:\n%s", c.line, c.firstLine(), exit, p.exit, out)
		}
		for _, w := range missing {
			t.Errorf("README.md:%d: %s: the page promises %q; it printed:\n%s", c.line, c.firstLine(), w, out)
		}
		for _, n := range append(p.not, stopped...) {
			if strings.Contains(out, n) {
				t.Errorf("README.md:%d: %s: printed %q:\n%s", c.line, c.firstLine(), n, out)
			}
		}
		if p.check != nil {
			p.check(t, page, out)
		}
		return
	}
}

func (p *promise) missing(out string) []string {
	var m []string
	for _, w := range p.want {
		if !strings.Contains(out, w) {
			m = append(m, w)
		}
	}
	return m
}

// exec runs one command in the reader's shell: its output and exit status.
func (r *reader) exec(c command) (string, int) {
	t := r.t
	r.n++
	script := filepath.Join(r.scripts, fmt.Sprintf("%03d.sh", r.n))
	if err := os.WriteFile(script, []byte(c.text+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := fmt.Sprintf("README-TEST-DONE-%d", r.n)
	fmt.Fprintf(r.in, ". %s </dev/null; printf '\\n%s %%d\\n' $?\n", script, done)
	var out strings.Builder
	limit := time.NewTimer(timeout(c))
	defer limit.Stop()
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				t.Fatalf("README.md:%d: %s: the shell ended; it printed:\n%s", c.line, c.firstLine(), out.String())
			}
			if rest, ok := strings.CutPrefix(l, done+" "); ok {
				exit, err := strconv.Atoi(rest)
				if err != nil {
					t.Fatalf("exit status %q: %v", rest, err)
				}
				return strings.TrimSuffix(out.String(), "\n"), exit
			}
			out.WriteString(l + "\n")
		case <-limit.C:
			t.Fatalf("README.md:%d: %s: still running after %s; it printed:\n%s", c.line, c.firstLine(), timeout(c), out.String())
		}
	}
}

// background starts c in a shell of its own and waits until it prints what p promises.
func (r *reader) background(c command, p *promise) {
	t := r.t
	r.n++
	bc := &backgroundCommand{c: c, p: p, log: filepath.Join(r.scripts, fmt.Sprintf("%03d.log", r.n)), done: make(chan struct{})}
	log, err := os.Create(bc.log)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close() // the child holds its own descriptor
	bc.cmd = exec.Command("bash", "--noprofile", "--norc", "-c", c.text)
	bc.cmd.Dir, bc.cmd.Env = r.dir, r.env
	bc.cmd.Stdout, bc.cmd.Stderr = log, log
	bc.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := bc.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = bc.cmd.Wait(); close(bc.done) }()
	r.running = append(r.running, bc)
	limit := time.Now().Add(timeout(c))
	for len(p.missing(bc.output())) > 0 {
		select {
		case <-bc.done:
			t.Fatalf("README.md:%d: %s ended before printing %q; it printed:\n%s", c.line, c.firstLine(), p.missing(bc.output()), bc.output())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(limit) {
			t.Fatalf("README.md:%d: %s: no %q after %s; it printed:\n%s", c.line, c.firstLine(), p.missing(bc.output()), timeout(c), bc.output())
		}
	}
}

// ctrlC stops every background command as a reader does, with Ctrl-C in its shell (SIGINT to its
// process group); each must end within half a minute, and print nothing it should not.
func (r *reader) ctrlC() {
	t := r.t
	for _, bc := range r.running {
		_ = syscall.Kill(-bc.cmd.Process.Pid, syscall.SIGINT)
	}
	for _, bc := range r.running {
		select {
		case <-bc.done:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-bc.cmd.Process.Pid, syscall.SIGKILL)
			<-bc.done
			t.Errorf("README.md:%d: %s did not stop within 30s of Ctrl-C; it printed:\n%s", bc.c.line, bc.c.firstLine(), bc.output())
		}
		out := bc.output()
		for _, n := range append(bc.p.not, stopped...) {
			if strings.Contains(out, n) {
				t.Errorf("README.md:%d: %s printed %q:\n%s", bc.c.line, bc.c.firstLine(), n, out)
			}
		}
	}
	r.running = nil
}

func (r *reader) stop() {
	r.ctrlC()
	r.in.Close()
	done := make(chan struct{})
	go func() { _ = r.shell.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-r.shell.Process.Pid, syscall.SIGKILL)
		<-done
	}
}
