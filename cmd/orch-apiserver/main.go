// Command orch-apiserver serves the events.orch.io/v1 API over HTTPS, storing objects in etcd
// (an embedded one by default). `orch-apiserver check-config FILE...` validates
// apiserver.config.orch.io/v1 files without starting.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/benbjohnson/clock"
	"github.com/spf13/pflag"

	"orch.io/orch/components/apis/apiserver/config"
	"orch.io/orch/components/apiserver/app"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "check-config" {
		os.Exit(config.CheckFiles(os.Args[2:], os.Stdout, os.Stderr))
	}
	o := app.NewOptions()
	fs := pflag.NewFlagSet("orch-apiserver", pflag.ContinueOnError)
	o.AddFlags(fs)
	showVersion := fs.Bool("version", false, "Print version information and quit.")
	fs.Usage = func() {
		fmt.Fprintf(os.Stderr, "Usage:\n  orch-apiserver [flags]\n  orch-apiserver check-config FILE...   validate configuration files and exit (1 if any is invalid)\n\nFlags:\n%s", fs.FlagUsages())
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if err == pflag.ErrHelp {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *showVersion {
		fmt.Printf("orch-apiserver %s\n", app.Version.GitVersion)
		return
	}
	o.RecordExplicit(fs)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, o, clock.New(), nil); err != nil {
		// One problem per line: a configuration with five mistakes shows five.
		fmt.Fprintf(os.Stderr, "orch-apiserver: refusing to run:\n%v\n", err)
		os.Exit(1)
	}
}
