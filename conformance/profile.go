package conformance

import (
	"fmt"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
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
	// StartOnlyAbsent, instead of StartOnly, says why the agent has no such mode: the scenarios that
	// start it that way are then not applicable, with that reason.
	StartOnlyAbsent string `json:"startOnlyAbsent,omitempty"`
	// Run are arguments under which the agent keeps running without pod sources or servers, and
	// RunningText is what its output shows once it runs.
	Run         []string `json:"run,omitempty"`
	RunningText string   `json:"runningText,omitempty"`
	// Standalone are arguments under which the agent runs pods in standalone mode on the runtime
	// and serves its servers; the scenario adds the endpoint, addresses, ports and pod sources.
	// In Run and Standalone, {dir} is the scenario's directory.
	Standalone []string `json:"standalone,omitempty"`
	// RejectReasons maps a reason the scenarios give a refused static pod to the one the agent
	// gives, where they differ; orch's profile has none, so orch is held to the scenarios' reasons.
	RejectReasons map[string]string `json:"rejectReasons,omitempty"`
	// EventLog says where standalone mode records events: "output" is one JSON line
	// {"verb":"create|update","event":{...}} per write on the agent's output; empty: nowhere a
	// scenario can read, and the event-recording scenarios are not applicable.
	EventLog string `json:"eventLog,omitempty"`
	// OptionNames maps SPEC.md's option names (without dashes) to this implementation's, where they
	// differ (for example orchconfig: kubeconfig).
	OptionNames map[string]string `json:"optionNames,omitempty"`
	// Renames are SPEC.md's product words and this implementation's, in the order they are tried
	// (for example [orchlet, kubelet] before [orch, kubernetes]): applied to the defaults and the
	// feature-gate names the help must show.
	Renames [][2]string `json:"renames,omitempty"`
	// TypeWords maps an option type of SPEC.md to the words the help may print for it; a type
	// missing here must be printed as written. An empty word means no type is printed.
	TypeWords map[string][]string `json:"typeWords,omitempty"`
	// ConfigFile says how to write a --config file: the document's fixed members, and the field
	// each option is set through.
	ConfigFile *AgentConfigFile `json:"configFile,omitempty"`
}

// AgentConfigFile describes the agent's configuration file format.
type AgentConfigFile struct {
	Header map[string]any    `json:"header"`
	Fields map[string]string `json:"fields"`
}

// LoadProfile reads a profile strictly, so a misspelt key is an error rather than a silent default.
func LoadProfile(path string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p Profile
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if p.APIServer != nil && (len(p.APIServer.Namespaces) < 2 || p.APIServer.Group == "" || p.APIServer.Version == "" || p.APIServer.Resource == "") {
		return nil, fmt.Errorf("%s: apiserver needs group, version, resource and two namespaces", path)
	}
	if a := p.Agent; a != nil && (len(a.StartOnly) == 0) == (a.StartOnlyAbsent == "") {
		return nil, fmt.Errorf("%s: agent needs exactly one of startOnly and startOnlyAbsent", path)
	}
	return &p, nil
}

// Components lists what the profile can run, as named by @component: tags.
func (p *Profile) Components() []string {
	var out []string
	if p.APIServer != nil {
		out = append(out, "apiserver")
		if p.APIServer.Start != nil {
			out = append(out, "apiserver-start")
		}
	}
	if p.ConfigCheck != nil && len(p.ConfigCheck.Command) > 0 {
		out = append(out, "config-check")
	}
	if p.Simulator != nil {
		out = append(out, "simulator")
	}
	if p.Agent != nil {
		out = append(out, "agent")
		if p.Runtime != nil && p.Agent.RunningText != "" {
			out = append(out, "runtime")
			if p.Agent.EventLog == "output" {
				out = append(out, "agent-events")
			}
		}
	}
	return out
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

// Args spells every --option of a SPEC.md argument string the agent's way.
func (a *AgentProfile) Args(spec string) []string {
	var out []string
	for _, f := range strings.Fields(spec) {
		if strings.HasPrefix(f, "--") {
			name, value, hasValue := strings.Cut(f, "=")
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
