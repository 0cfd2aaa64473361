package config_test

import (
	"fmt"
	"os"

	"orch.io/orch/components/apis/apiserver/config"
)

// CheckFiles is what `orch-apiserver check-config FILE...` runs: one line per valid file on
// stdout, every problem of an invalid one on stderr, and the exit code to return.
func ExampleCheckFiles() {
	code := config.CheckFiles([]string{
		"testdata/tracing/valid/endpoint-and-rate.yaml",
		"testdata/tracing/invalid/endpoint-missing-port.yaml",
	}, os.Stdout, os.Stdout)
	fmt.Printf("exit %d\n", code)
	// Output:
	// testdata/tracing/valid/endpoint-and-rate.yaml: ok (TracingConfiguration)
	// testdata/tracing/invalid/endpoint-missing-port.yaml:5: endpoint: Invalid value: "collector.example.com": must be a host:port address: missing port in address
	// exit 1
}
