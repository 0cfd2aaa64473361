package conformance

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// credentialSteps give the agent an image credential provider plugin: orch's own, built with the
// target, placed under a name in a directory of the scenario; and judge a provider configuration's
// refusal by the field it names.
func credentialSteps() []StepDef {
	return []StepDef{
		{`^the credential provider plugin "([^"]*)" in the directory "([^"]*)"$`, func(w *World) any { return w.credentialPlugin }},
		{`^the agent run with "([^"]*)" exits naming the field "([^"]*)", with or without its list indexes, as "([^"]*)"$`, func(w *World) any { return w.agentRunExitsNamingField }},
	}
}

func (w *World) credentialPlugin(name, dir string) error {
	bin := filepath.Join(w.t.Bin(), "orch-credential-provider")
	if _, err := os.Stat(bin); err != nil {
		return w.notApplicable("the target does not build orch-credential-provider")
	}
	dir = filepath.Join(w.dir, dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.Symlink(bin, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("placing the plugin: %w", err)
	}
	return nil
}

// listIndex is a list element's index in a field path, "[0]" of "providers[0].name".
var listIndex = regexp.MustCompile(`\[[0-9]+\]`)

// agentRunExitsNamingField wants the agent to exit naming the field and what was wrong with it
// ("providers[0].tokenAttributes.cacheType: Required value"), the path with its list indexes or
// without them: the kubelet's credential provider validation builds every provider's paths from
// "providers" without the provider's index, where orch gives Kubernetes' usual indexed path.
func (w *World) agentRunExitsNamingField(args, path, what string) error {
	indexed := path + ": " + what
	bare := listIndex.ReplaceAllString(path, "") + ": " + what
	return w.agentRunExitsWith(args, indexed, func(out string) bool {
		return strings.Contains(out, indexed) || strings.Contains(out, bare)
	})
}
