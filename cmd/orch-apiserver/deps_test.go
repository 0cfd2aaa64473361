package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The server types managedFields with the schemas of its own kinds (registry/generic's
// typeschema.yaml): client-go's apply configurations, or its clientset, link every API group and
// parse the schemas of all of them: 17 MB of binary and 13 MiB resident (issue 17).
func TestBinaryLinksNoApplyConfigurations(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, heavy := range []string{"k8s.io/client-go/applyconfigurations", "k8s.io/client-go/kubernetes", "k8s.io/client-go/discovery", "k8s.io/api/apps"} {
			if pkg == heavy || strings.HasPrefix(pkg, heavy+"/") {
				t.Errorf("orch-apiserver links %s", pkg)
			}
		}
	}
}
