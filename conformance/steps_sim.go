package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/cucumber/godog"

	"orch.io/orch/conformance/target"
)

// simSteps replay node scenarios in simulated time with the profile's simulator and read their
// traces.
func simSteps() []StepDef {
	return []StepDef{
		{`^the simulated node scenario "([^"]*)":$`, func(w *World) any { return w.writeSimScenario }},
		{`^the simulator replays "([^"]*)" with the agent options "([^"]*)"$`, func(w *World) any { return w.simReplay }},
		{`^the simulated trace has a line "([^"]*)"$`, func(w *World) any { return w.simHasLine }},
		{`^the simulated trace has (\d+) lines? "([^"]*)"$`, func(w *World) any { return w.simCountLines }},
		{`^the simulated trace has no line "([^"]*)"$`, func(w *World) any { return func(pattern string) error { return w.simCountLines(0, pattern) } }},
	}
}

func (w *World) writeSimScenario(name string, doc *godog.DocString) error {
	return os.WriteFile(filepath.Join(w.dir, name), []byte(doc.Content), 0o600)
}

// simReplay fills {args} of the scenario file, the options of its node's agent, and replays it.
func (w *World) simReplay(name, options string) error {
	src, err := os.ReadFile(filepath.Join(w.dir, name))
	if err != nil {
		return err
	}
	args, err := json.Marshal(w.t.Profile.Agent.Args(options))
	if err != nil {
		return err
	}
	file := filepath.Join(w.dir, "replay-"+name)
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(string(src), "{args}", string(args))), 0o600); err != nil {
		return err
	}
	r, err := w.t.Run(w.dir, w.t.Profile.Simulator.Command, file)
	if err != nil {
		return err
	}
	if r.Code != 0 {
		return fmt.Errorf("the simulator exited %d:\n%s", r.Code, target.Tail(r.Output()))
	}
	w.simTrace = strings.Split(strings.TrimSuffix(r.Stdout, "\n"), "\n")
	return nil
}

// simGlob matches a whole trace line, "*" standing for any run of characters.
func simGlob(pattern string) *regexp.Regexp {
	return regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*") + "$")
}

func (w *World) simMatches(pattern string) []string {
	g := simGlob(pattern)
	var out []string
	for _, l := range w.simTrace {
		if g.MatchString(l) {
			out = append(out, l)
		}
	}
	return out
}

func (w *World) simHasLine(pattern string) error {
	if len(w.simMatches(pattern)) == 0 {
		return fmt.Errorf("no trace line matches %q in:\n%s", pattern, w.simRelevant())
	}
	return nil
}

func (w *World) simCountLines(n int, pattern string) error {
	if got := w.simMatches(pattern); len(got) != n {
		return fmt.Errorf("%d trace lines match %q, want %d:\n%s", len(got), pattern, n, strings.Join(got, "\n"))
	}
	return nil
}

// simRelevant is the part of the trace worth showing when a line is missing: conditions and
// events, where the rules this suite replays show.
func (w *World) simRelevant() string {
	var out []string
	for _, l := range w.simTrace {
		if strings.Contains(l, " node conditions ") || strings.Contains(l, " event ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
