// Command kubectl is Kubernetes' own kubectl, built from its module (k8s.io/kubectl) at the
// version of the client libraries orch uses, so tests and the README can drive orch-apiserver with
// the client users have. It is a module of its own: its dependencies stay out of orch's.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
)

func main() {
	os.Exit(cli.Run(cmd.NewDefaultKubectlCommand()))
}
