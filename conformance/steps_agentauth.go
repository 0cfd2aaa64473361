package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// agentAuthSteps run the agent in API-server mode against a server of the scenario's own, whose
// token file and authorization the scenario chooses, so the agent's reviews reach that server.
func agentAuthSteps() []StepDef {
	return []StepDef{
		{`^a token file with the users ((?:"[^"]*"(?:, )?)+)$`, func(w *World) any { return w.tokenFile }},
		{`^the agent runs in API-server mode against the scenario's API server with "([^"]*)"$`, func(w *World) any { return w.agentRunsAgainstScenarioServer }},
		{`^requests carry the bearer token of "([^"]*)"$`, func(w *World) any { return w.useBearer }},
		{`^requests carry the bearer token "([^"]*)"$`, func(w *World) any { return func(t string) error { w.node().token = t; return nil } }},
	}
}

// userToken is the bearer token a token file of the scenario gives user.
func userToken(user string) string { return user + "-token" }

// tokenFile writes {dir}/tokens.csv: the profile's administrator token, so the server still answers
// the suite's probe, and a token per user, named <user>-token.
func (w *World) tokenFile(users string) error {
	lines := []string{fmt.Sprintf("%s,conformance-admin,conformance-1,\"system:masters\"", w.t.Profile.APIServer.Token)}
	for _, m := range quoted.FindAllStringSubmatch(users, -1) {
		lines = append(lines, fmt.Sprintf("%s,%s,%s-uid", userToken(m[1]), m[1], m[1]))
	}
	return os.WriteFile(filepath.Join(w.dir, "tokens.csv"), []byte(strings.Join(lines, "\n")+"\n"), 0o600)
}

func (w *World) useBearer(user string) error {
	w.node().token = userToken(user)
	return nil
}

// agentRunsAgainstScenarioServer runs the agent with a kubeconfig for the scenario's API server and
// the profile's administrator token.
func (w *World) agentRunsAgainstScenarioServer(args string) error {
	if w.server == nil {
		return fmt.Errorf("no API server of the scenario is running: %v", w.result)
	}
	kubeconfig, err := w.writeKubeconfig("orchlet.conf", "scenario", "agent", w.server.BaseURL, w.server.CAFile, w.t.Profile.APIServer.Token)
	if err != nil {
		return err
	}
	return w.agentRuns(args + " --orchconfig=" + kubeconfig)
}
