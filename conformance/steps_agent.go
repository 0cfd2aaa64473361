package conformance

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/yaml"

	"orch.io/orch/conformance/target"
)

func agentSteps() []StepDef {
	return []StepDef{
		{`^the agent is run with "([^"]*)"$`, func(w *World) any { return w.agentRun }},
		{`^the agent starts with "([^"]*)"$`, func(w *World) any { return w.agentStart }},
		{`^it exits successfully$`, func(w *World) any { return w.exitsSuccessfully }},
		{`^it starts$`, func(w *World) any { return w.exitsSuccessfully }},
		{`^it refuses to start naming "([^"]*)"$`, func(w *World) any { return w.refusesNaming }},
		{`^its output lists the option "([^"]*)"$`, func(w *World) any { return w.outputListsOption }},
		{`^its output shows the version$`, func(w *World) any { return w.outputShowsVersion }},
		{`^the agent's version is read$`, func(w *World) any { return w.readVersion }},
		{`^the agent starts reporting its version followed by "([^"]*)"$`, func(w *World) any { return w.startWithVersion }},
		{`^an agent configuration file setting "([^"]*)" to (.+)$`, func(w *World) any { return w.agentConfigFile }},
		{`^a drop-in configuration file setting "([^"]*)" to (.+)$`, func(w *World) any { return w.agentDropIn }},
		{`^an agent runs holding the lock file "([^"]*)" with "([^"]*)"$`, func(w *World) any { return w.agentHoldsLock }},
		{`^another agent starts with the lock file "([^"]*)" and "([^"]*)"$`, func(w *World) any { return w.agentContends }},
		{`^the running agent exits$`, func(w *World) any { return w.runningAgentExits }},
		{`^the agent's help is read$`, func(w *World) any { return w.readHelp }},
		{`^the help lists the option "([^"]*)" of type "([^"]*)"$`, func(w *World) any { return w.helpType }},
		{`^the help shows "([^"]*)" with default "([^"]*)"$`, func(w *World) any { return w.helpDefault }},
		{`^the help marks "([^"]*)" as deprecated for "([^"]*)"$`, func(w *World) any { return w.helpDeprecation }},
		{`^the help lists feature gate "([^"]*)" as "([^"]*)" with default "([^"]*)"$`, func(w *World) any { return w.helpGate }},
	}
}

func (w *World) agent() *target.AgentProfile { return w.t.Profile.Agent }

func (w *World) agentRun(args string) error {
	r, err := w.t.Run(w.dir, w.agent().Command, w.agent().Args(args)...)
	w.result = &r
	return err
}

// agentStart runs the agent with the profile's start-only arguments: it validates its options, runs
// its start-up checks and exits. The scenario's own arguments come last and so win. An agent
// without that mode is started for real instead, where the profile says how (startAndStop).
func (w *World) agentStart(args string) error {
	a := w.agent()
	args = strings.ReplaceAll(args, "{manifests}", w.manifestDir())
	scenario := append(a.Args(args), w.configArgs(args)...)
	if len(a.StartOnly) == 0 {
		if !a.StartsToJudge() {
			return w.notApplicable(a.StartOnlyAbsent)
		}
		return w.startAndStop(scenario)
	}
	argv := append(w.t.ExpandAll(a.StartOnly), scenario...)
	r, err := w.t.Run(w.dir, a.Command, argv...)
	w.result = &r
	return err
}

// startAndStop judges the scenario's arguments by starting the agent with the profile's run
// arguments, on the scenario's runtime (one is started when the profile has a runtime and the
// scenario none). Its output showing the running text counts as accepted: exit 0 is recorded and
// the agent stopped. An exit before that is its refusal, recorded with its status; the agent's
// whole output is the result's Stderr, where its refusals are looked for.
func (w *World) startAndStop(scenario []string) error {
	if w.t.Profile.Runtime != nil && (w.n == nil || w.n.runtimes["runtime"] == nil) {
		if err := w.startRuntime("runtime"); err != nil {
			return err
		}
	}
	r, err := w.launchAgent(scenario)
	if err != nil {
		return err
	}
	defer r.stop()
	exited, err := w.waitRunning(r)
	switch {
	case exited:
		w.result = &target.Result{Code: r.cmd.ProcessState.ExitCode(), Stderr: r.output()}
		return nil
	case err != nil:
		return err
	}
	w.result = &target.Result{Stderr: r.output()}
	return nil
}

// launchAgent starts the agent with the profile's run arguments, then args, then the scenario's
// runtime endpoint when it has one.
func (w *World) launchAgent(args []string) (*runningAgent, error) {
	a := w.agent()
	argv := append(w.t.ExpandAll(a.Command), w.t.ExpandAll(w.inDir(a.Run))...)
	argv = append(argv, args...)
	// A running agent runs on a runtime, even without pods.
	if w.n != nil && w.n.runtimes["runtime"] != nil {
		endpoint, _ := w.runtimeFields("runtime")
		argv = append(argv, a.OptionName("container-runtime-endpoint")+"="+endpoint)
	}
	r := &runningAgent{cmd: exec.Command(argv[0], argv[1:]...), exited: make(chan struct{})}
	r.cmd.Dir, r.cmd.Stdout, r.cmd.Stderr = w.dir, r, r
	if err := r.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { _ = r.cmd.Wait(); close(r.exited) }()
	return r, nil
}

// waitRunning waits until the agent's output shows the running text (nil), it exits (exited), or
// the command time limit passes.
func (w *World) waitRunning(r *runningAgent) (exited bool, err error) {
	a := w.agent()
	deadline := time.Now().Add(target.CommandTimeout)
	for !strings.Contains(r.output(), a.RunningText) {
		select {
		case <-r.exited:
			return true, fmt.Errorf("the agent exited instead of running:\n%s", r.output())
		default:
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("the agent neither said %q nor exited within %s:\n%s", a.RunningText, target.CommandTimeout, r.output())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false, nil
}

// configArgs points the agent at the configuration files the scenario wrote, unless the scenario's
// own arguments name them.
func (w *World) configArgs(args string) []string {
	var out []string
	if strings.Contains(args, "--config=") {
		return nil
	}
	if _, err := os.Stat(filepath.Join(w.dir, "orchlet.yaml")); err == nil {
		out = append(out, w.agent().OptionName("config")+"="+filepath.Join(w.dir, "orchlet.yaml"))
	}
	if _, err := os.Stat(filepath.Join(w.dir, "conf.d")); err == nil {
		out = append(out, w.agent().OptionName("config-dir")+"="+filepath.Join(w.dir, "conf.d"))
	}
	return out
}

func (w *World) exitsSuccessfully() error {
	if err := w.needResult(); err != nil {
		return err
	}
	if w.result.Code != 0 {
		return fmt.Errorf("want exit 0, got %d:\n%s", w.result.Code, w.result.Output())
	}
	return nil
}

func (w *World) refusesNaming(option string) error {
	if err := w.needResult(); err != nil {
		return err
	}
	name := w.agent().OptionName(option)
	if w.result.Code == 0 || !strings.Contains(w.result.Stderr, name) {
		return fmt.Errorf("want a non-zero exit naming %s, got %d:\n%s", name, w.result.Code, w.result.Output())
	}
	return nil
}

func (w *World) outputListsOption(option string) error {
	if err := w.needResult(); err != nil {
		return err
	}
	if !strings.Contains(w.result.Output(), w.agent().OptionName(option)) {
		return fmt.Errorf("want %s in the output:\n%s", option, w.result.Output())
	}
	return nil
}

// semver finds a version such as v1.2.3 or v0.1.0-rc.1 in --version output.
var semver = regexp.MustCompile(`v\d+\.\d+\.\d+[0-9A-Za-z.+-]*`)

func (w *World) outputShowsVersion() error {
	if err := w.needResult(); err != nil {
		return err
	}
	if w.result.Code != 0 || !semver.MatchString(w.result.Stdout) {
		return fmt.Errorf("want a version on stdout and exit 0, got %d:\n%s", w.result.Code, w.result.Output())
	}
	return nil
}

func (w *World) readVersion() error {
	r, err := w.t.Run(w.dir, w.agent().Command, w.agent().OptionName("version"))
	if err != nil {
		return err
	}
	w.version = semver.FindString(r.Stdout)
	if r.Code != 0 || w.version == "" {
		return fmt.Errorf("--version printed no version, exit %d:\n%s", r.Code, r.Output())
	}
	return nil
}

func (w *World) startWithVersion(suffix string) error {
	if w.version == "" {
		return fmt.Errorf("read the agent's version first")
	}
	if err := w.agentStart("--version=" + w.version + suffix); err != nil {
		return err
	}
	if w.result.Code != 0 || !strings.Contains(w.result.Output(), w.version+suffix) {
		return fmt.Errorf("want exit 0 reporting %s%s, got %d:\n%s", w.version, suffix, w.result.Code, w.result.Output())
	}
	return nil
}

// configDoc builds a configuration file document setting one option through its field.
func (w *World) configDoc(option, value string) ([]byte, error) {
	cf := w.agent().ConfigFile
	if cf == nil {
		return nil, fmt.Errorf("the profile does not say how to write the agent's configuration file")
	}
	field, ok := cf.Fields[strings.TrimLeft(option, "-")]
	if !ok {
		return nil, fmt.Errorf("the profile names no configuration field for %s", option)
	}
	v, err := parseValue(value)
	if err != nil {
		return nil, err
	}
	doc := map[string]any{}
	for k, x := range cf.Header {
		doc[k] = x
	}
	doc[field] = v
	return yaml.Marshal(doc)
}

func (w *World) agentConfigFile(option, value string) error {
	data, err := w.configDoc(option, value)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(w.dir, "orchlet.yaml"), data, 0o600)
}

func (w *World) agentDropIn(option, value string) error {
	data, err := w.configDoc(option, value)
	if err != nil {
		return err
	}
	dir := filepath.Join(w.dir, "conf.d")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "10-conformance.conf"), data, 0o600)
}

func (w *World) readHelp() error {
	_, err := w.t.AgentHelp()
	return err
}

func (w *World) helpEntry(option string) (*target.HelpEntry, error) {
	h, err := w.t.AgentHelp()
	if err != nil {
		return nil, err
	}
	name := strings.TrimLeft(w.agent().OptionName(option), "-")
	e, ok := h.Options[name]
	if !ok {
		return nil, fmt.Errorf("the help does not list %s", option)
	}
	return e, nil
}

func (w *World) helpType(option, specType string) error {
	e, err := w.helpEntry(option)
	if err != nil {
		return err
	}
	words, ok := w.agent().TypeWords[specType]
	if !ok {
		words = []string{specType}
	}
	for _, word := range words {
		if e.Type == word {
			return nil
		}
	}
	return fmt.Errorf("%s: help prints type %q, want one of %q (SPEC.md type %q)", option, e.Type, words, specType)
}

// zeroDefaults are defaults pflag does not print: a help without "(default ...)" shows them.
var zeroDefaults = map[string]bool{"": true, "''": true, "none": true, "0": true, "false": true}

// placeholder is a <name> part of a SPEC.md default, which any text may fill.
var placeholder = regexp.MustCompile(`<[^>]+>`)

func (w *World) helpDefault(option, want string) error {
	e, err := w.helpEntry(option)
	if err != nil {
		return err
	}
	want = w.agent().Rename(want)
	if zeroDefaults[want] && (e.Default == "" || e.Default == want) {
		return nil
	}
	pattern := "^" + placeholder.ReplaceAllString(regexp.QuoteMeta(want), `[^/]+`) + "$"
	if regexp.MustCompile(pattern).MatchString(e.Default) {
		return nil
	}
	return fmt.Errorf("%s: help shows default %q, want %q", option, e.Default, want)
}

func (w *World) helpDeprecation(option, reason string) error {
	e, err := w.helpEntry(option)
	if err != nil {
		return err
	}
	deprecated := strings.Contains(e.Text, "DEPRECATED")
	var ok bool
	switch reason {
	case "none":
		ok = !deprecated
	case "config file":
		ok = deprecated && strings.Contains(e.Text, w.agent().OptionName("config"))
	case "eviction options":
		ok = deprecated && strings.Contains(e.Text, "eviction")
	default: // "removal in <version>"
		ok = deprecated && strings.Contains(e.Text, strings.TrimPrefix(reason, "removal in "))
	}
	if !ok {
		return fmt.Errorf("%s: want deprecation %q, help says: %s", option, reason, e.Text)
	}
	return nil
}

func (w *World) helpGate(name, stage, def string) error {
	h, err := w.t.AgentHelp()
	if err != nil {
		return err
	}
	name = w.agent().Rename(name)
	g, ok := h.Gates[name]
	if !ok {
		return fmt.Errorf("the help lists no feature gate %s", name)
	}
	if g.Stage != stage || g.Default != def {
		return fmt.Errorf("gate %s: help says %s default %s, want %s default %s", name, g.Stage, g.Default, stage, def)
	}
	return nil
}

// runningAgent is an agent a scenario keeps running in the background.
type runningAgent struct {
	cmd    *exec.Cmd
	exited chan struct{}
	mu     sync.Mutex
	out    bytes.Buffer
}

func (r *runningAgent) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.Write(p)
}

func (r *runningAgent) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// stop ends the agent if it still runs.
func (r *runningAgent) stop() {
	select {
	case <-r.exited:
	default:
		_ = r.cmd.Process.Kill()
		<-r.exited
	}
}

// agentHoldsLock starts an agent with the profile's run arguments, a lock file and the scenario's
// runtime, and waits until it says it runs.
func (w *World) agentHoldsLock(lock, args string) error {
	a := w.agent()
	if len(a.Run) == 0 || a.RunningText == "" {
		return fmt.Errorf("the profile does not say how to keep the agent running")
	}
	r, err := w.launchAgent(a.Args(args + " --lock-file=" + filepath.Join(w.dir, lock)))
	if err != nil {
		return err
	}
	w.running = r
	_, err = w.waitRunning(r)
	return err
}

func (w *World) agentContends(lock, args string) error {
	return w.agentStart(args + " --lock-file=" + filepath.Join(w.dir, lock))
}

func (w *World) runningAgentExits() error {
	if w.running == nil {
		return fmt.Errorf("no agent is running")
	}
	select {
	case <-w.running.exited:
		if code := w.running.cmd.ProcessState.ExitCode(); code != 0 {
			return fmt.Errorf("the running agent exited %d:\n%s", code, w.running.output())
		}
		return nil
	case <-time.After(target.CommandTimeout):
		return fmt.Errorf("the running agent did not exit within %s:\n%s", target.CommandTimeout, w.running.output())
	}
}
