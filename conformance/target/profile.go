package target

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"orch.io/orch/conformance/catalog"
)

// Profile says how to reach the implementation under test. Strings may hold placeholders: {root}
// (the module root), {bin} (where Build puts binaries), {work} (a fresh directory for this run) and
// {port} (a free local port chosen for the API server).
type Profile struct {
	Name string `json:"name"`
	// Build lists Go packages, relative to {root}, built into {bin} before the run.
	Build       []string            `json:"build,omitempty"`
	APIServer   *APIServerProfile   `json:"apiserver,omitempty"`
	ConfigCheck *ConfigCheckProfile `json:"configCheck,omitempty"`
	Agent       *AgentProfile       `json:"agent,omitempty"`
	Runtime     *RuntimeProfile     `json:"runtime,omitempty"`
	// NotApplicable maps a scenario tag (without the @: rule:<id> or component:<name>) to why the
	// implementation cannot be asked about it; its scenarios are reported not applicable with that
	// reason instead of run.
	NotApplicable map[string]string `json:"notApplicable,omitempty"`
	Simulator     *SimulatorProfile `json:"simulator,omitempty"`
	// Names spells, for each of OpenNames (keyed by orch's spelling), the implementation's.
	Names map[string]string `json:"names,omitempty"`
}

// OpenName is a name SPEC.md leaves to the implementation, as orch spells it, and what it names.
type OpenName struct{ Orch, What string }

// OpenNames are the names the steps use that SPEC.md leaves open. A profile that can run its agent
// against its own API server (the runtime and apiserver-start capabilities) spells each in names,
// orch's profile included; a step takes a name through Profile.Spell, never as a literal.
var OpenNames = []OpenName{
	{"coordination.orch.io", "the API group of the nodes' Leases"},
	{"orch-node-lease", "the namespace of the nodes' Leases"},
	{"certificates.orch.io", "the API group of CertificateSigningRequests"},
	{"orch.io/orch-apiserver-client-orchlet", "the signer of the agent's client certificates"},
	{"orch.io/orchlet-serving", "the signer of the agent's serving certificates"},
	{"orchlet-client-current.pem", "the file in --cert-dir holding the agent's current client certificate and key"},
	{"orchpods", "the cgroup under --cgroup-root holding the pods' cgroups, with --cgroups-per-qos"},
	{"orchlet.config.orch.io", "the API group of the agent's configuration files (its CredentialProviderConfig)"},
}

// Spell replaces each of OpenNames in s by the profile's spelling of it; one the profile does not
// spell stays orch's.
func (p *Profile) Spell(s string) string {
	pairs := make([]string, 0, 2*len(p.Names))
	for _, n := range OpenNames {
		if v, ok := p.Names[n.Orch]; ok {
			pairs = append(pairs, n.Orch, v)
		}
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// SimulatorProfile replays a node scenario (scenarios/README.md) in simulated time: the
// implementation's own node agent code against simulated hosts, runtimes and clocks, for rules a
// real node cannot be driven into in reasonable time (memory pressure that holds for minutes).
type SimulatorProfile struct {
	// Command followed by a scenario file replays it, prints its trace one line per entry
	// ("00:01:00.000 node-a event create Warning Evicted default/big: ...") and exits 0.
	Command []string `json:"command"`
}

// RuntimeProfile starts a CRI runtime for a scenario's agent: fakecri or anything with its control
// API (script, call log, state, kill), through which scenarios script faults and watch the calls the
// agent makes. {socket} is a fresh socket path in the scenario's directory.
type RuntimeProfile struct {
	// Command starts a runtime serving CRI on {socket}; it runs until the scenario ends.
	Command []string `json:"command"`
	// Endpoint is the agent's --container-runtime-endpoint for that runtime, Control the unix socket
	// of its control API.
	Endpoint string `json:"endpoint"`
	Control  string `json:"control"`
}

// APIServerProfile reaches the Event API over HTTPS.
type APIServerProfile struct {
	// Start, when set, is how to start the server for the run; without it the server is already up
	// at BaseURL.
	Start   *StartProfile `json:"start,omitempty"`
	BaseURL string        `json:"baseURL"`
	// CAFile verifies the server's certificate; Token is a bearer token allowed every Event operation.
	CAFile string `json:"caFile"`
	Token  string `json:"token"`
	// EncryptionPrefix starts a value encrypted at rest in etcd: orch:enc: for orch, before
	// <provider>:v1:<key name>:.
	EncryptionPrefix string `json:"encryptionPrefix,omitempty"`
	// AuthenticationGroup spells authentication.orch.io, where TokenReviews are posted.
	AuthenticationGroup string `json:"authenticationGroup,omitempty"`
	// JWTReadyLog is what the server logs once a JWT authenticator is initialized, %q standing for
	// the issuer URL. Empty: the server says nothing, and an authenticator counts as initialized a
	// second after its provider served discovery to it.
	JWTReadyLog string `json:"jwtReadyLog,omitempty"`
	// CauseFields maps an Event field of SPEC.md to the path this implementation names for it in a
	// refusal's causes, where the two differ (SPEC.md leaves error bodies unspecified; Kubernetes
	// names the core-group type's fields: note is message there).
	CauseFields map[string]string `json:"causeFields,omitempty"`
	// ReadyPaths must exist too before a started server counts as up, beside the Event API's
	// group-version: what the implementation creates only after it serves (namespaces, say). A path
	// exists once it answers anything but 404: a scenario's authorizer may refuse the suite.
	ReadyPaths []string `json:"readyPaths,omitempty"`
	// ReadyPathsWith are ready paths of a started server whose flags (the profile's args for the
	// suite's server, a scenario's own) contain the key: what the implementation makes after it
	// serves only under some flags (kube-apiserver's RBAC bootstrap roles, made only when RBAC is
	// among its authorization modes).
	ReadyPathsWith map[string][]string `json:"readyPathsWith,omitempty"`
	// Group, Version and Resource spell events.orch.io, v1 and events for this implementation.
	Group    string `json:"group"`
	Version  string `json:"version"`
	Resource string `json:"resource"`
	// Namespaces are two existing namespaces the run may write Events into.
	Namespaces []string `json:"namespaces"`
}

// StartProfile starts an API server: Files are written under {work} first, then Command runs
// followed by Args for the suite's server, or by a scenario's own arguments for a server of the
// scenario (configuration flags, for example).
type StartProfile struct {
	Command []string          `json:"command"`
	Args    []string          `json:"args,omitempty"`
	Files   map[string]string `json:"files,omitempty"`
}

// ConfigCheckProfile runs the checker of apiserver.config.orch.io/v1 files: Command followed by the
// file names must exit 0 for valid files and 1 for invalid ones, printing one "path: reason" per
// problem. Without a Command (an implementation that only reads its files at start) the checker's
// scenarios are not applicable, and APIVersion still spells the files the API server is started on.
type ConfigCheckProfile struct {
	Command []string `json:"command,omitempty"`
	// APIVersion spells apiserver.config.orch.io/v1 for this implementation.
	APIVersion string `json:"apiVersion"`
}

// AgentProfile runs the node agent.
type AgentProfile struct {
	Command []string `json:"command"`
	// StartOnly are arguments under which the agent validates its options, runs its start-up checks
	// and exits 0 instead of running.
	StartOnly []string `json:"startOnly,omitempty"`
	// StartOnlyAbsent, instead of StartOnly, says why the agent has no such mode. The scenarios that
	// start it that way then start it for real with Run (on the profile's runtime, if any), the
	// scenario's arguments last: its output showing RunningText is its acceptance, after which it is
	// stopped, and an exit before that its refusal, judged by exit status and what the output names.
	// Without Run they are not applicable, with this reason.
	StartOnlyAbsent string `json:"startOnlyAbsent,omitempty"`
	// Run are arguments under which the agent keeps running without pod sources or servers, and
	// RunningText is what its output shows once it runs.
	Run         []string `json:"run,omitempty"`
	RunningText string   `json:"runningText,omitempty"`
	// Standalone are arguments under which the agent runs pods in standalone mode on the runtime
	// and serves its servers; the scenario adds the endpoint, addresses, ports and pod sources.
	// In Run and Standalone, {dir} is the scenario's directory.
	Standalone []string `json:"standalone,omitempty"`
	// SyncingText, when set, is what the output of an agent run with Standalone shows once it
	// syncs pods, some time after RunningText: Kubernetes' kubelet says it started before it has
	// started its runtime's managers, and syncs no pod until then. A scenario's agent counts as
	// running once it shows both.
	SyncingText string `json:"syncingText,omitempty"`
	// RejectReasons maps a reason the scenarios give a refused static pod to the one the agent
	// gives, where they differ; orch's profile has none, so orch is held to the scenarios' reasons.
	RejectReasons map[string]string `json:"rejectReasons,omitempty"`
	// EventLog says where standalone mode records events: "output" is one JSON line
	// {"verb":"create|update","event":{...}} per write on the agent's output; "klog" is one line
	// of Kubernetes' event broadcaster per event recorded on its log ("Event occurred"
	// object="<namespace>/<name>" kind="Pod" type="Normal" reason="Pulled"), before any rate limit;
	// empty: nowhere a scenario can read, and the event-recording scenarios are not applicable.
	EventLog string `json:"eventLog,omitempty"`
	// OptionNames maps SPEC.md's option names (without dashes) to this implementation's, where they
	// differ (for example orchconfig: kubeconfig).
	OptionNames map[string]string `json:"optionNames,omitempty"`
	// Renames are SPEC.md's product words and this implementation's, in the order they are tried
	// (for example [orchlet, kubelet] before [orch, kubernetes]): applied to the defaults and the
	// feature-gate names the help must show, and to the values of --feature-gates, --node-labels
	// and --enforce-node-allocatable the agent is started with.
	Renames [][2]string `json:"renames,omitempty"`
	// TypeWords maps an option type of SPEC.md to the words the help may print for it; a type
	// missing here must be printed as written. An empty word means no type is printed.
	TypeWords map[string][]string `json:"typeWords,omitempty"`
	// ConfigFile says how to write a --config file: the document's fixed members, and the field
	// each option is set through.
	ConfigFile *AgentConfigFile `json:"configFile,omitempty"`
}

// The places agent.eventLog names.
const (
	EventLogOutput = "output"
	EventLogKlog   = "klog"
)

// AgentConfigFile describes the agent's configuration file format.
type AgentConfigFile struct {
	Header map[string]any    `json:"header"`
	Fields map[string]string `json:"fields"`
}

// loadProfile reads a profile strictly, so a misspelt key is an error rather than a silent default,
// and checks it: every problem check finds is in the error, each naming its key.
func loadProfile(path string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p Profile
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if problems := p.check(); len(problems) > 0 {
		return nil, fmt.Errorf("%s: the profile is incomplete (conformance/TARGETS.md says what each key is):\n  %s", path, strings.Join(problems, "\n  "))
	}
	return &p, nil
}

// check lists what the profile lacks or gets wrong, each problem naming its key, in the order of
// conformance/TARGETS.md. A section the profile leaves out is no problem: its scenarios are not
// applicable.
func (p *Profile) check() []string {
	var out []string
	need := func(ok bool, format string, args ...any) {
		if !ok {
			out = append(out, fmt.Sprintf(format, args...))
		}
	}
	need(p.Name != "", "name: say what the target is; the reports are titled with it")
	if a := p.APIServer; a != nil {
		need(a.BaseURL != "", "apiserver.baseURL: the https:// address of the API server")
		need(a.CAFile != "", "apiserver.caFile: the CA file that verifies the API server's certificate")
		need(a.Token != "", "apiserver.token: a bearer token allowed every Event operation")
		need(a.Group != "" && a.Version != "" && a.Resource != "", "apiserver.group, version, resource: where the Event API is served (events.orch.io, v1, events for orch)")
		need(len(a.Namespaces) >= 2, "apiserver.namespaces: two existing namespaces the run may write Events into")
		if a.Start != nil {
			need(len(a.Start.Command) > 0, "apiserver.start.command: the command that starts the API server")
		}
	}
	if c := p.ConfigCheck; c != nil {
		need(c.APIVersion != "", "configCheck.apiVersion: how the configuration files spell apiserver.config.orch.io/v1")
	}
	if a := p.Agent; a != nil {
		need(len(a.Command) > 0, "agent.command: the command that runs the node agent")
		need((len(a.StartOnly) == 0) != (a.StartOnlyAbsent == ""), "agent: exactly one of startOnly (the arguments under which the agent validates its options and exits) and startOnlyAbsent (why it has no such mode)")
		need(len(a.Run) == 0 || a.RunningText != "", "agent.runningText: what the agent's output shows once it runs, needed with agent.run")
		need(a.EventLog == "" || a.EventLog == EventLogOutput || a.EventLog == EventLogKlog, "agent.eventLog: %q is not a place the suite reads; \"output\", \"klog\" or nothing", a.EventLog)
	}
	if r := p.Runtime; r != nil {
		need(len(r.Command) > 0 && strings.Contains(strings.Join(r.Command, " "), "{socket}"), "runtime.command: the command that starts a CRI runtime serving on {socket}")
		need(r.Endpoint != "", "runtime.endpoint: the agent's --container-runtime-endpoint for {socket}")
		need(r.Control != "", "runtime.control: the unix socket of the runtime's control API")
		need(p.Agent != nil, "runtime: a runtime is only used by an agent section")
	}
	if s := p.Simulator; s != nil {
		need(len(s.Command) > 0, "simulator.command: the command that replays a scenario file")
	}
	for _, key := range slices.Sorted(maps.Keys(p.Names)) {
		need(slices.ContainsFunc(OpenNames, func(n OpenName) bool { return n.Orch == key }),
			"names: %q is not a name the steps use (conformance/TARGETS.md lists them)", key)
	}
	if runsPods(p) && p.APIServer != nil && p.APIServer.Start != nil {
		for _, n := range OpenNames {
			_, ok := p.Names[n.Orch]
			need(ok, "names: %q is not spelt: how this implementation names %s", n.Orch, n.What)
		}
	}
	for _, tag := range p.notApplicableTags() {
		kind, name, _ := strings.Cut(tag, ":")
		need(kind == "rule" || (kind == "component" && capabilityOf(name) != nil),
			"notApplicable: %q is neither rule:<id> nor component:<one of %s>", tag, strings.Join(CapabilityNames(), ", "))
	}
	return out
}

// Capability is what a target provides for the scenarios tagged @component:<Name>.
type Capability struct {
	Name string
	// Needs says, in the profile's keys, what gives the target the capability.
	Needs string
	// Unlocks says what the suite can judge with it.
	Unlocks string
	has     func(p *Profile) bool
}

// Capabilities are every @component: tag a scenario may carry, in the order of TARGETS.md.
var Capabilities = []Capability{
	{"apiserver", "an apiserver section: baseURL, caFile, token, group, version, resource, namespaces",
		"the Event API: operations, validation, limits, discovery",
		func(p *Profile) bool { return p.APIServer != nil }},
	{"apiserver-start", "apiserver.start: the command that starts an API server with a scenario's flags",
		"servers started on a scenario's flags and files: authentication, authorization, encryption at rest, tracing, rate limits",
		func(p *Profile) bool { return p.APIServer != nil && p.APIServer.Start != nil }},
	{"config-check", "configCheck.command: a checker that exits 0 for valid configuration files and 1 for refused ones",
		"the configuration file rules",
		func(p *Profile) bool { return p.ConfigCheck != nil && len(p.ConfigCheck.Command) > 0 }},
	{"agent", "an agent section: command, and startOnly or startOnlyAbsent",
		"the agent's options, help, feature gates and start-up refusals",
		func(p *Profile) bool { return p.Agent != nil }},
	{"runtime", "a runtime section and agent.runningText",
		"standalone mode on a CRI runtime with fakecri's control API: pods, servers, garbage collection, eviction, API-server mode",
		runsPods},
	{"agent-events", "agent.eventLog: output or klog, with the runtime capability",
		"the events the standalone agent records",
		func(p *Profile) bool { return runsPods(p) && p.Agent.EventLog != "" }},
	{"simulator", "a simulator section: the command that replays a node scenario in simulated time",
		"rules that need minutes of pressure on a node",
		func(p *Profile) bool { return p.Simulator != nil }},
}

func runsPods(p *Profile) bool {
	return p.Agent != nil && p.Runtime != nil && p.Agent.RunningText != ""
}

// capabilityOf returns the capability a @component: tag names, or nil.
func capabilityOf(name string) *Capability {
	for i := range Capabilities {
		if Capabilities[i].Name == name {
			return &Capabilities[i]
		}
	}
	return nil
}

// CapabilityNames are the names of Capabilities, each a @component: tag a scenario may carry.
func CapabilityNames() []string {
	out := make([]string, len(Capabilities))
	for i, c := range Capabilities {
		out[i] = c.Name
	}
	return out
}

// Components lists what the profile can run, as named by @component: tags.
func (p *Profile) Components() []string {
	var out []string
	for _, c := range Capabilities {
		if c.has(p) {
			out = append(out, c.Name)
		}
	}
	return out
}

// StartsToJudge says whether an agent without a mode that validates and exits is started for real
// instead: with its run arguments, judged accepted once its output shows the running text and
// refused by an exit before that.
func (a *AgentProfile) StartsToJudge() bool {
	return len(a.StartOnly) == 0 && len(a.Run) > 0 && a.RunningText != ""
}

// RejectReason is the agent's reason for a refused static pod where the scenarios say reason.
func (a *AgentProfile) RejectReason(reason string) string {
	if r, ok := a.RejectReasons[reason]; ok {
		return r
	}
	return reason
}

// OptionName spells a SPEC.md option (with or without dashes) the way the agent does.
func (a *AgentProfile) OptionName(spec string) string {
	name := strings.TrimLeft(spec, "-")
	if n, ok := a.OptionNames[name]; ok {
		name = n
	}
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// productValues are the options whose values hold SPEC.md's product words (gate names, label
// keys, the reserved levels of node allocatable), which Args spells with the profile's renames.
var productValues = map[string]bool{"feature-gates": true, "node-labels": true, "enforce-node-allocatable": true}

// Args spells every --option of a SPEC.md argument string the agent's way, and the values of
// productValues with its renames.
func (a *AgentProfile) Args(spec string) []string {
	var out []string
	for _, f := range strings.Fields(spec) {
		if strings.HasPrefix(f, "--") {
			name, value, hasValue := strings.Cut(f, "=")
			if productValues[strings.TrimLeft(name, "-")] {
				value = a.Rename(value)
			}
			f = a.OptionName(name)
			if hasValue {
				f += "=" + value
			}
		}
		out = append(out, f)
	}
	return out
}

// ConfigAPIVersion spells apiserver.config.orch.io/v1 for the implementation.
func (p *Profile) ConfigAPIVersion() (string, error) {
	if p.ConfigCheck == nil || p.ConfigCheck.APIVersion == "" {
		return "", fmt.Errorf("profile %s: configCheck.apiVersion is needed to write configuration files", p.Name)
	}
	return p.ConfigCheck.APIVersion, nil
}

// Rename spells SPEC.md's text with the agent's product words.
func (a *AgentProfile) Rename(spec string) string {
	if len(a.Renames) == 0 {
		return spec
	}
	pairs := make([]string, 0, 2*len(a.Renames))
	for _, r := range a.Renames {
		pairs = append(pairs, r[0], r[1])
	}
	return strings.NewReplacer(pairs...).Replace(spec)
}

// Describe says what the profile provides, for the person about to run the suite: each capability,
// and for one it lacks what would give it and how many of the scenarios it leaves not applicable;
// then how the agent is judged at start, and the profile's own not-applicable entries.
func (p *Profile) Describe(scenarios []catalog.Scenario) string {
	var b strings.Builder
	fmt.Fprintf(&b, "target %q provides:\n", p.Name)
	for _, c := range Capabilities {
		if c.has(p) {
			fmt.Fprintf(&b, "  %-16s yes: %s\n", c.Name, c.Unlocks)
			continue
		}
		n := 0
		for _, s := range scenarios {
			if slices.Contains(s.Components(), c.Name) {
				n++
			}
		}
		fmt.Fprintf(&b, "  %-16s no (%d scenarios not applicable): needs %s\n", c.Name, n, c.Needs)
	}
	if a := p.Agent; a != nil && len(a.StartOnly) == 0 {
		if a.StartsToJudge() {
			b.WriteString("  the agent has no mode that validates and exits: it is started with agent.run and judged by its running text or its exit\n")
		} else {
			fmt.Fprintf(&b, "  the agent has no mode that validates and exits, and no agent.run to start it with: those scenarios are not applicable (%s)\n", a.StartOnlyAbsent)
		}
	}
	for _, tag := range p.notApplicableTags() {
		fmt.Fprintf(&b, "  not applicable by the profile: %s (%s)\n", tag, p.NotApplicable[tag])
	}
	return b.String()
}

func (p *Profile) notApplicableTags() []string { return slices.Sorted(maps.Keys(p.NotApplicable)) }
