package scenario

import (
	"fmt"
	"os"
)

// configHead is what every orchlet configuration file starts with.
const configHead = "apiVersion: orchlet.config.orch.io/v1beta1\nkind: OrchletConfiguration\n"

// withConfigFile is the node's options, with --config naming a file holding its Config when it has
// one; the node reads it as it is added, and remove deletes it then.
func withConfigFile(n Node) (args []string, remove func(), err error) {
	if n.Config == "" {
		return n.Args, func() {}, nil
	}
	f, err := os.CreateTemp("", "orchsim-config-*.yaml")
	if err != nil {
		return nil, nil, fmt.Errorf("node %s: config: %w", n.Name, err)
	}
	path := f.Name()
	_, werr := f.WriteString(configHead + n.Config)
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		_ = os.Remove(path)
		return nil, nil, fmt.Errorf("node %s: config: %w", n.Name, werr)
	}
	return append([]string{"--config=" + path}, n.Args...), func() { _ = os.Remove(path) }, nil
}
