package conformance

import (
	"fmt"
	"os"
	"path/filepath"
)

// credentialSteps give the agent an image credential provider plugin: orch's own, built with the
// target, placed under a name in a directory of the scenario.
func credentialSteps() []StepDef {
	return []StepDef{
		{`^the credential provider plugin "([^"]*)" in the directory "([^"]*)"$`, func(w *World) any { return w.credentialPlugin }},
	}
}

func (w *World) credentialPlugin(name, dir string) error {
	bin := filepath.Join(w.t.bin(), "orch-credential-provider")
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
