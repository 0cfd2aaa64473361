package target

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"orch.io/orch/conformance/catalog"
)

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseHelp(t *testing.T) {
	h := parseHelp(`Usage:
  agent [flags]

Generic flags:

      --address string     IP address to serve on. (DEPRECATED: set it in the --config file.) (default "0.0.0.0")
      --anonymous-auth     Allow anonymous requests. (default true)
      --feature-gates mapStringBool   Gates. Options are:
                                      AllAlpha=true|false (ALPHA - default=false)
                                      APIServerIdentity=true|false (BETA - default=true)
      --enforce-node-allocatable strings   Levels. (default pods)
  -v, --v Level            Log level.
`)
	for name, want := range map[string]HelpEntry{
		"address":                  {Type: "string", Default: "0.0.0.0"},
		"anonymous-auth":           {Default: "true"},
		"feature-gates":            {Type: "mapStringBool"},
		"enforce-node-allocatable": {Type: "strings", Default: "pods"},
		"v":                        {Type: "Level"},
	} {
		e, ok := h.Options[name]
		if !ok || e.Type != want.Type || e.Default != want.Default {
			t.Errorf("%s: got %+v, want type %q default %q", name, e, want.Type, want.Default)
		}
	}
	if !strings.Contains(h.Options["address"].Text, "DEPRECATED") {
		t.Errorf("address text: %q", h.Options["address"].Text)
	}
	if g := h.Gates["APIServerIdentity"]; g != (Gate{Stage: "BETA", Default: "true"}) {
		t.Errorf("gate: %+v", g)
	}
}

func TestAgentArgsFollowTheProfilesNames(t *testing.T) {
	a := &AgentProfile{OptionNames: map[string]string{"orchconfig": "kubeconfig"}}
	got := strings.Join(a.Args("--orchconfig=/x --event-qps=1 -v --feature-gates=A=true value"), " ")
	if want := "--kubeconfig=/x --event-qps=1 -v --feature-gates=A=true value"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	a.Renames = [][2]string{{"Orchlet", "Kubelet"}, {"orch", "kubernetes"}}
	got = strings.Join(a.Args("--feature-gates=OrchletPSI=true --node-labels=orch.io/role=db --root-dir=/var/lib/orch"), " ")
	if want := "--feature-gates=KubeletPSI=true --node-labels=kubernetes.io/role=db --root-dir=/var/lib/orch"; got != want {
		t.Errorf("got %q, want %q: gate names and label keys renamed, nothing else", got, want)
	}
	a.Renames = append([][2]string{{"orch-reserved", "kube-reserved"}}, a.Renames...)
	got = strings.Join(a.Args("--enforce-node-allocatable=pods,orch-reserved-compressible --kube-reserved-cgroup=/orch-reserved"), " ")
	if want := "--enforce-node-allocatable=pods,kube-reserved-compressible --kube-reserved-cgroup=/orch-reserved"; got != want {
		t.Errorf("got %q, want %q: the levels of node allocatable renamed, nothing else", got, want)
	}
	if a.OptionName("v") != "-v" || a.OptionName("--orchconfig") != "--kubeconfig" {
		t.Errorf("names: %q %q", a.OptionName("v"), a.OptionName("--orchconfig"))
	}
}

func TestEveryProfileLoads(t *testing.T) {
	paths, err := filepath.Glob("../targets/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no profiles: %v", err)
	}
	for _, p := range paths {
		if _, err := loadProfile(p); err != nil {
			t.Error(err)
		}
	}
}

// An agent profile says how the agent validates and exits, or why it cannot: exactly one of the two.
func TestProfileStartOnly(t *testing.T) {
	for _, tc := range []struct {
		name, agent string
		ok          bool
	}{
		{"start-only arguments", "startOnly: [--runonce]", true},
		{"the reason there are none", "startOnlyAbsent: no such mode", true},
		{"neither", "runningText: started", false},
		{"both", "startOnly: [--runonce]\n  startOnlyAbsent: no such mode", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "p.yaml")
			if err := os.WriteFile(path, []byte("name: p\nagent:\n  command: [agent]\n  "+tc.agent+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := loadProfile(path)
			if tc.ok && err != nil {
				t.Fatal(err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "startOnly")) {
				t.Fatalf("want an error naming startOnly, got %v", err)
			}
		})
	}
}

// Renames are tried in order at each place of the text: orchlet before orch.
func TestAgentRename(t *testing.T) {
	a := &AgentProfile{Renames: [][2]string{{"orchlet", "kubelet"}, {"Orchlet", "Kubelet"}, {"orch", "kubernetes"}}}
	for in, want := range map[string]string{
		"/usr/libexec/orch/orchlet-plugins/volume/exec/": "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/",
		"RotateOrchletServerCertificate":                 "RotateKubeletServerCertificate",
		"application/vnd.orch.protobuf":                  "application/vnd.kubernetes.protobuf",
		"SchedulerAsyncAPICalls":                         "SchedulerAsyncAPICalls",
	} {
		if got := a.Rename(in); got != want {
			t.Errorf("Rename(%q) = %q, want %q", in, got, want)
		}
	}
}

// A profile's reject reasons replace only the reasons they name; without any, the scenario's stands.
func TestRejectReason(t *testing.T) {
	kubelet := &AgentProfile{RejectReasons: map[string]string{"OutOfpods": "UnexpectedAdmissionError"}}
	for _, tc := range []struct {
		a        *AgentProfile
		in, want string
	}{
		{&AgentProfile{}, "OutOfpods", "OutOfpods"},
		{kubelet, "OutOfpods", "UnexpectedAdmissionError"},
		{kubelet, "NodeAffinity", "NodeAffinity"},
	} {
		if got := tc.a.RejectReason(tc.in); got != tc.want {
			t.Errorf("RejectReason(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// Every profile of targets/ loads, and what its notApplicable names exists.
func TestProfilesNameKnownRules(t *testing.T) {
	c, err := catalog.LoadCatalog("../../features/rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, r := range c.Rules {
		known[r.ID] = true
	}
	paths, _ := filepath.Glob("../targets/*.yaml")
	for _, path := range paths {
		p, err := loadProfile(path)
		if err != nil {
			t.Error(err)
			continue
		}
		for tag := range p.NotApplicable {
			if id, ok := strings.CutPrefix(tag, "rule:"); ok && !known[id] {
				t.Errorf("%s: notApplicable names %q, not a catalog rule", path, id)
			}
		}
	}
}

// A profile missing what its sections need is refused with every problem, each by its key.
func TestProfileCheckNamesEveryKey(t *testing.T) {
	path := writeFile(t, t.TempDir(), "p.yaml", `apiserver:
  baseURL: https://127.0.0.1:6443
  start: {}
configCheck: {}
agent:
  run: [--serve=false]
  eventLog: journal
runtime:
  command: [fakecri]
simulator: {}
notApplicable:
  component:gpu: none here
  rule:a.b: chosen otherwise
`)
	_, err := loadProfile(path)
	if err == nil {
		t.Fatal("want the profile refused")
	}
	for _, want := range []string{"name:", "apiserver.caFile:", "apiserver.token:", "apiserver.group, version, resource:",
		"apiserver.namespaces:", "apiserver.start.command:", "configCheck.apiVersion:", "agent.command:",
		"agent: exactly one of startOnly", "agent.runningText:", `agent.eventLog: "journal"`, "runtime.command:",
		"runtime.endpoint:", "runtime.control:", "simulator.command:", `notApplicable: "component:gpu"`, "TARGETS.md"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "rule:a.b") || strings.Contains(err.Error(), "apiserver.baseURL") {
		t.Errorf("a key given right is named:\n%v", err)
	}
}

// TARGETS.md is the contract: a row for every capability a scenario may need, and the worked
// example exactly as the profile the tests load.
func TestTargetsDocumentsTheContract(t *testing.T) {
	doc, err := os.ReadFile("../TARGETS.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range Capabilities {
		if !strings.Contains(string(doc), "| `"+c.Name+"` | ") || !strings.Contains(string(doc), c.Unlocks) {
			t.Errorf("TARGETS.md has no row for the capability %s saying it unlocks %q", c.Name, c.Unlocks)
		}
	}
	for _, n := range OpenNames {
		if !strings.Contains(string(doc), "| `"+n.Orch+"` | "+n.What+" |") {
			t.Errorf("TARGETS.md has no row for the open name %s (%s)", n.Orch, n.What)
		}
	}
	example, err := os.ReadFile("../targets/tern.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "```yaml\n"+string(example)+"```\n") {
		t.Error("TARGETS.md's worked example differs from targets/tern.example.yaml")
	}
}

// The worked example provides what TARGETS.md says, and a machine without its programs is told so
// by key before anything runs.
func TestWorkedExample(t *testing.T) {
	p, err := loadProfile("../targets/tern.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(p.Components(), " "), "apiserver apiserver-start agent runtime"; got != want {
		t.Errorf("components %q, want %q", got, want)
	}
	if !p.Agent.StartsToJudge() {
		t.Error("ternlet has run and runningText but no start-only mode: it should be started to judge its options")
	}
	scenarios, err := catalog.LoadFeatures("../../features")
	if err != nil {
		t.Fatal(err)
	}
	d := p.Describe(scenarios)
	for _, want := range []string{`target "tern 0.3" provides:`, "  apiserver        yes:", "  config-check     no (",
		"needs configCheck.command", "started with agent.run", "rule:orch.event.regarding.namespace-matches (Tern follows"} {
		if !strings.Contains(d, want) {
			t.Errorf("Describe lacks %q:\n%s", want, d)
		}
	}
	tgt := New(p, "", t.TempDir())
	err = tgt.checkCommands()
	for _, want := range []string{"agent.command: /opt/tern/bin/ternlet is not a program", "apiserver.start.command: /opt/tern/bin/tern-apiserver is not a program"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q, got %v", want, err)
		}
	}
}

// A profile that runs its agent against its own API server spells every open name; Spell applies
// them inside any text, and leaves what a profile does not spell as orch's.
func TestOpenNames(t *testing.T) {
	path := writeFile(t, t.TempDir(), "p.yaml", `name: p
apiserver:
  start: {command: [server]}
  baseURL: https://127.0.0.1:{port}
  caFile: ca.crt
  token: t
  group: events.p.dev
  version: v1
  resource: events
  namespaces: [a, b]
agent: {command: [agent], startOnly: [--check], runningText: running}
runtime: {command: [rt, "{socket}"], endpoint: "unix://{socket}", control: "{socket}.control"}
names:
  coordination.orch.io: coordination.p.dev
  leases.orch.io: leases.p.dev
`)
	_, err := loadProfile(path)
	for _, want := range []string{`names: "leases.orch.io" is not a name the steps use`, `names: "orch-node-lease" is not spelt`, `names: "orchlet-client-current.pem" is not spelt`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q, got %v", want, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), `"coordination.orch.io" is not spelt`) {
		t.Errorf("a spelt name is called missing: %v", err)
	}
	kube := &Profile{Names: map[string]string{"orchlet-client-current.pem": "kubelet-client-current.pem", "coordination.orch.io": "coordination.k8s.io"}}
	for in, want := range map[string]string{
		"{dir}/pki/orchlet-client-current.pem":                     "{dir}/pki/kubelet-client-current.pem",
		"/apis/coordination.orch.io/v1/namespaces/orch-node-lease": "/apis/coordination.k8s.io/v1/namespaces/orch-node-lease",
	} {
		if got := kube.Spell(in); got != want {
			t.Errorf("Spell(%q) = %q, want %q", in, got, want)
		}
	}
}

// A ready path of readyPathsWith is waited for only on a server whose flags name its key: the
// RBAC bootstrap binding that kube-apiserver makes only under RBAC.
func TestReadyPathsWith(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "clusterrolebindings") {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	tgt := &Target{Profile: &Profile{APIServer: &APIServerProfile{Group: "events.p.dev", Version: "v1",
		ReadyPaths:     []string{"/api/v1/namespaces/default"},
		ReadyPathsWith: map[string][]string{"RBAC": {"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/system:public-info-viewer"}}}}}
	if err := tgt.probeReady(srv.Client(), srv.URL, []string{"--authorization-mode=AlwaysAllow"}); err != nil {
		t.Errorf("without RBAC: %v", err)
	}
	if err := tgt.probeReady(srv.Client(), srv.URL, []string{"--authorization-mode=Node,RBAC"}); err == nil || !strings.Contains(err.Error(), "clusterrolebindings") {
		t.Errorf("under RBAC the missing binding should keep the server not ready, got %v", err)
	}
}
