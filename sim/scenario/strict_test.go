package scenario

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"orch.io/orch/fakecri/script"
)

const okScenario = `duration: 1m
nodes:
- name: node-a
  args: ["--pod-manifest-path=/etc/orch/manifests"]
timeline:
- at: 10s
  delete: [web.yaml]
`

// Every mistake is refused with its file and line, and for an unknown key or option what was
// expected there; several mistakes are reported together.
func TestLoadRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, edit, with string
		want             []string
	}{
		{name: "unknown top-level key", edit: "duration: 1m", with: "durtion: 1m\nduration: 1m", want: []string{
			"x.yaml:1: durtion: unknown key; expected name, description, rules, seed, duration, omit, nodes, timeline or expect (did you mean duration?)"}},
		{name: "a key in the wrong case", edit: "  delete:", with: "  Delete:", want: []string{
			"x.yaml:7: timeline[0].Delete: unknown key; expected at, node, write, delete, serve, fakecri, createPod, bindPod, deletePod, apiServer or orchlet (did you mean delete?)"}},
		{name: "unknown key in a runtime script", edit: "  args:", with: "  fakecri: {imgaes: []}\n  args:", want: []string{
			"x.yaml:4: nodes[0].fakecri.imgaes: unknown key; expected seed, node, images, containers, exec, faults, files or ports (did you mean images?)"}},
		{name: "nothing near", edit: "  args:", with: "  colour: blue\n  args:", want: []string{
			"x.yaml:4: nodes[0].colour: unknown key; expected name, args, config, cores, manifests, url, fakecri, api or host"}},
		{name: "misspelt option", edit: `"--pod-manifest-path=/etc/orch/manifests"`, with: `"--pod-manifest-pth=/m"`, want: []string{
			"x.yaml:4: nodes[0].args: unknown flag: --pod-manifest-pth (did you mean --pod-manifest-path?)"}},
		{name: "invalid option value", edit: `"--pod-manifest-path=/etc/orch/manifests"`, with: `"--max-pods=many"`, want: []string{
			`x.yaml:4: nodes[0].args: invalid argument "many" for "--max-pods" flag: strconv.ParseInt: parsing "many": invalid syntax`}},
		{name: "unknown config field", edit: "  args:", with: "  config: |\n    imageMaximumGCAeg: 1m\n  args:", want: []string{
			`x.yaml:4: nodes[0].config: unknown field "imageMaximumGCAeg"`}},
		{name: "step past duration", edit: "- at: 10s", with: "- at: 61s", want: []string{
			"x.yaml:6: timeline[0].at: 1m1s is outside the scenario's 0..1m0s (duration)"}},
		{name: "steps out of order", edit: "  delete: [web.yaml]", with: "  delete: [web.yaml]\n- at: 5s", want: []string{
			"x.yaml:8: timeline[1].at: 5s is before the step above it (10s): steps must be in time order"}},
		{name: "orchlet steps out of turn", edit: "  delete: [web.yaml]", with: "  orchlet: restart\n- at: 20s\n  orchlet: kill\n- at: 30s\n  orchlet: kill\n- at: 40s\n  orchlet: crash", want: []string{
			"x.yaml:7: timeline[0].orchlet: node node-a's agent is running (kill it first)",
			"x.yaml:11: timeline[2].orchlet: node node-a's agent is already killed (restart it first)",
			`x.yaml:13: timeline[3].orchlet: "crash" is neither kill nor restart`}},
		{name: "runtime expectation out of range", edit: "  delete: [web.yaml]", with: "  delete: [web.yaml]\nexpect:\n  runtime:\n  - {at: 2m, since: 3m, pods: {web: [app]}}", want: []string{
			"x.yaml:10: expect.runtime[0].at: 2m0s is outside the scenario's 0..1m0s (duration)",
			"x.yaml:10: expect.runtime[0].since: 3m0s is outside 0..2m0s (at)",
			`x.yaml:10: expect.runtime[0].pods: "web" is not namespace/name`}},
		{name: "a character class in a glob", edit: "  delete: [web.yaml]", with: "  delete: [web.yaml]\nexpect:\n  absent: [\"00:00:[0-2]* Evicted *\", \"* faults[0] *\"]\n  count:\n  - {match: \"00:0[a-z]*\", lines: 0}", want: []string{
			`x.yaml:9: expect.absent[0]: "00:00:[0-2]* Evicted *" has [0-2], which a glob matches as those characters: globs have only * (any run) and ? (one character)`,
			`x.yaml:11: expect.count[0].match: "00:0[a-z]*" has [a-z], which a glob matches as those characters: globs have only * (any run) and ? (one character)`}},
		{name: "several at once", edit: "- at: 10s", with: "- at: 2m\n  node: node-b\n  apiServer: sideways", want: []string{
			`x.yaml:7: timeline[0].node: no node "node-b"`,
			"x.yaml:6: timeline[0]: API steps need a node with api: true",
			`x.yaml:8: timeline[0].apiServer: "sideways" is neither down nor up`,
			"x.yaml:6: timeline[0].at: 2m0s is outside the scenario's 0..1m0s (duration)"}},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "x.yaml")
		if !strings.Contains(okScenario, tc.edit) {
			t.Fatalf("%s: %q is not in the scenario", tc.name, tc.edit)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(okScenario, tc.edit, tc.with, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path)
		if err == nil {
			t.Errorf("%s: loaded", tc.name)
			continue
		}
		got := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), "")
		if lines := strings.Split(got, "\n"); !reflect.DeepEqual(lines, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, lines, tc.want)
		}
	}
	path := filepath.Join(t.TempDir(), "ok.yaml")
	if err := os.WriteFile(path, []byte(okScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err != nil {
		t.Errorf("the scenario itself: %v", err)
	}
}

func TestNearest(t *testing.T) {
	keys := []string{"at", "node", "write", "delete", "createPod"}
	for word, want := range map[string]string{"wirte": "write", "createpod": "createPod", "nodes": "node", "dlete": "delete", "colour": "", "x": ""} {
		if got := nearest(word, keys); got != want {
			t.Errorf("nearest(%q) = %q, want %q", word, got, want)
		}
	}
}

// orchsim new's skeleton loads, replays meeting its expectations, and every key it shows commented
// out loads too once uncommented.
func TestSkeleton(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "new.yaml")
	if err := WriteSkeleton(path); err != nil {
		t.Fatal(err)
	}
	if err := WriteSkeleton(path); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second write: %v, want a refusal", err)
	}
	if err := WriteSkeleton(filepath.Join(dir, "new.yml")); err == nil {
		t.Error("a name not ending in .yaml was accepted")
	}
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(0)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Failures) > 0 {
		t.Errorf("the skeleton's expectations fail: %q", r.Failures)
	}
	commented := regexp.MustCompile(`(?m)^(\s*)# ([a-z]+: .*)$`)
	if n := len(commented.FindAllString(skeleton, -1)); n < 4 {
		t.Fatalf("%d commented keys, want the 4 or more the skeleton shows", n)
	}
	open := filepath.Join(dir, "uncommented.yaml")
	if err := os.WriteFile(open, []byte(commented.ReplaceAllString(skeleton, "$1$2")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(open); err != nil {
		t.Errorf("the skeleton with its commented keys: %v", err)
	}
}

// scenarios/README.md's format shows every key a scenario takes (a runtime script's keys are
// fakecri/README.md's).
func TestFormatReferenceCoversEveryKey(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "scenarios", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, format, _ := strings.Cut(string(doc), "## The format")
	format, _, _ = strings.Cut(format, "\n## ")
	script := reflect.TypeOf(script.Script{})
	seen := map[reflect.Type]bool{}
	var missing []string
	var walk func(typ reflect.Type, path string)
	walk = func(typ reflect.Type, path string) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || typ == script || seen[typ] {
			return
		}
		seen[typ] = true
		for i := range typ.NumField() {
			name := jsonName(typ.Field(i))
			if name == "" {
				continue
			}
			if !regexp.MustCompile(`(^|[\s{,])` + regexp.QuoteMeta(name) + `:`).MatchString(format) {
				missing = append(missing, path+name)
			}
			walk(typ.Field(i).Type, path+name+".")
		}
	}
	walk(reflect.TypeOf(Scenario{}), "")
	if len(missing) > 0 {
		t.Errorf("scenarios/README.md's format lacks %q", missing)
	}
}

// An agent in API-server mode is killed and restarted as a standalone one is: the scenario loads
// and runs, the node re-registers and lists its pods.
func TestOrchletKillInAPIMode(t *testing.T) {
	api := strings.Replace(strings.Replace(okScenario, `  args: ["--pod-manifest-path=/etc/orch/manifests"]`, "  api: true", 1), "  delete: [web.yaml]", "  orchlet: kill\n- at: 20s\n  orchlet: restart", 1)
	s, err := load(t, api)
	if err != nil {
		t.Fatalf("Load = %v, want the kill and restart accepted", err)
	}
	r, err := s.Run(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"orchlet killed (SIGKILL)", "orchlet restarted on its root directory", "api list pods  -> 200", `api create nodes  -> 409 nodes "node-a" already exists`} {
		if !strings.Contains(r.Trace, want) {
			t.Errorf("the trace lacks %q:\n%s", want, r.Trace)
		}
	}
}
