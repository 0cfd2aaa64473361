package conformance

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/cucumber/godog"

	"orch.io/orch/components/apiserver/tracing/tracingtest"
	"orch.io/orch/conformance/catalog"
	"orch.io/orch/conformance/hostmounts"
	"orch.io/orch/conformance/report"
	"orch.io/orch/conformance/target"
)

// StepDef is one step definition: its expression, and Bind, which returns the step function bound
// to a scenario's world. The coverage check reads the expressions without running anything.
type StepDef struct {
	Expr string
	Bind func(w *World) any
}

// StepDefs lists every step definition of the suite.
func StepDefs() []StepDef {
	var defs []StepDef
	defs = append(defs, eventSteps()...)
	defs = append(defs, configSteps()...)
	defs = append(defs, agentSteps()...)
	defs = append(defs, serverSteps()...)
	defs = append(defs, nodeSteps()...)
	defs = append(defs, streamSteps()...)
	defs = append(defs, ephemeralSteps()...)
	defs = append(defs, gcSteps()...)
	defs = append(defs, podSteps()...)
	defs = append(defs, nodeAllocatableSteps()...)
	defs = append(defs, memorySteps()...)
	defs = append(defs, systemContainerSteps()...)
	defs = append(defs, credentialSteps()...)
	defs = append(defs, certSteps()...)
	defs = append(defs, authzSteps()...)
	defs = append(defs, apiModeSteps()...)
	defs = append(defs, apiRateSteps()...)
	defs = append(defs, evictionSteps()...)
	defs = append(defs, etcdSteps()...)
	defs = append(defs, tracingSteps()...)
	defs = append(defs, oidcSteps()...)
	defs = append(defs, agentAuthSteps()...)
	defs = append(defs, bootstrapSteps()...)
	defs = append(defs, simSteps()...)
	defs = append(defs, rbacSteps()...)
	return defs
}

// World is one scenario's state.
type World struct {
	t   *target.Target
	dir string // a fresh directory for the scenario's files
	// suffix makes the scenario's object names unique on a server shared by every scenario.
	suffix string

	http   *answer        // the last HTTP answer
	creds  string         // "valid", "none", "unknown" or "bearer"
	bearer string         // the token sent under "bearer"
	doc    map[string]any // the configuration document being built
	docRaw string         // a configuration file given verbatim
	result *target.Result // the last command's result
	server *target.Server // an API server the scenario started
	// serverExited says the scenario's API server refused to start: its requests have no server.
	serverExited bool
	running      *runningAgent  // an agent the scenario keeps running
	version      string         // the agent's version as --version printed it
	extra        map[string]any // fields set on the next event created
	drop         []string       // fields removed from the next event created
	n            *node          // the runtimes and the agent of a node scenario
	certs        map[string]*keyPair
	requests     *requestLog // what the agent sent through a recording proxy
	webhook      *sarWebhook // an authorization webhook the scenario runs
	rbac         *rbacAnswer // the last answer a scenario's user was given
	// providers are the scenario's OIDC providers by name; {issuer:<name>} in its configuration
	// stands for one's URL.
	providers map[string]*oidcProvider
	// etcdURL is the client URL of the scenario's own etcd, if it started one.
	etcdURL string
	// collector receives the spans of the scenario's API server.
	collector *tracingtest.Collector
	// simTrace is the trace of the last simulated replay, one line per entry.
	simTrace []string
	// cleanup runs when the scenario ends, last added first.
	cleanup []func()
	// notApplicable records that the target cannot be asked what the scenario asks, and why; the
	// step returns what it returns, which skips the rest of the scenario.
	notApplicable func(reason string) error
}

// InitializeScenario registers the steps and hooks on a godog scenario context. Scenarios the
// target has no component for are skipped and recorded as not applicable.
func InitializeScenario(t *target.Target, rec *report.Recorder) func(*godog.ScenarioContext) {
	return func(sc *godog.ScenarioContext) {
		w := &World{t: t}
		var release func()
		for _, d := range StepDefs() {
			sc.Step(d.Expr, d.Bind(w))
		}
		sc.Before(func(ctx context.Context, p *godog.Scenario) (context.Context, error) {
			tags := make([]string, len(p.Tags))
			for i, tag := range p.Tags {
				tags[i] = tag.Name
			}
			release = t.Admit(tags)
			*w = World{t: t, creds: "valid", suffix: fmt.Sprintf("%06x", rand.IntN(1<<24))}
			w.notApplicable = func(reason string) error {
				rec.NotApplicable(p, reason)
				return godog.ErrSkip
			}
			rec.Start(p)
			// The profile's reasons first: they say more than a missing component.
			for _, tag := range p.Tags {
				if reason := t.Profile.NotApplicable[strings.TrimPrefix(tag.Name, "@")]; reason != "" {
					rec.NotApplicable(p, reason)
					return ctx, godog.ErrSkip
				}
			}
			for _, tag := range p.Tags {
				if c, ok := strings.CutPrefix(tag.Name, catalog.ComponentTagPrefix); ok && !t.Has(c) {
					rec.NotApplicable(p, "the target has no "+c)
					return ctx, godog.ErrSkip
				}
			}
			dir, err := os.MkdirTemp(t.Work(), "scenario-")
			w.dir = dir
			return ctx, err
		})
		sc.After(func(ctx context.Context, p *godog.Scenario, err error) (context.Context, error) {
			rec.Finish(p, err)
			if w.server != nil {
				w.server.Stop()
			}
			if w.running != nil {
				w.running.stop()
			}
			for i := len(w.cleanup) - 1; i >= 0; i-- {
				w.cleanup[i]()
			}
			if w.dir != "" {
				_ = hostmounts.UnmountUnder(w.dir) // what stays mounted keeps its directory: nothing worse
				os.RemoveAll(w.dir)
			}
			if release != nil {
				release()
				release = nil
			}
			return ctx, nil
		})
	}
}

// drain reads and closes a response body.
func drain(r io.ReadCloser) ([]byte, error) {
	defer r.Close()
	return io.ReadAll(r)
}
