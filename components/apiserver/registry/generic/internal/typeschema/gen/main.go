// Command gen writes the schema of orch-apiserver's kinds, trimmed from client-go's, to the file
// -o names: `go generate` runs it in components/apiserver/registry/generic.
package main

import (
	"flag"
	"fmt"
	"os"

	"orch.io/orch/components/apiserver/registry/generic/internal/typeschema"
)

func main() {
	out := flag.String("o", "typeschema.yaml", "the file to write")
	flag.Parse()
	data, err := typeschema.Generate()
	if err != nil {
		fmt.Fprintln(os.Stderr, "typeschema:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "typeschema:", err)
		os.Exit(1)
	}
}
