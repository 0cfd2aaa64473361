// Package linkcheck fails a test whose command links client-go's clientset, apply configurations,
// discovery or the API groups they bring: orch's binaries talk to the few kinds they serve or
// use, and each of those packages registers or parses every Kubernetes API group at start.
package linkcheck

import (
	"os/exec"
	"strings"
	"testing"
)

// heavy are the packages (and everything under them) no orch binary links.
var heavy = []string{"k8s.io/client-go/kubernetes", "k8s.io/client-go/discovery", "k8s.io/client-go/applyconfigurations", "k8s.io/api/apps"}

// NoHeavyDeps fails t for each heavy package the main package in the test's directory links;
// name names the binary in the message.
func NoHeavyDeps(t *testing.T, name string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, h := range heavy {
			if pkg == h || strings.HasPrefix(pkg, h+"/") {
				t.Errorf("%s links %s", name, pkg)
			}
		}
	}
}
