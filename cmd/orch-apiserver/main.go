// Command orch-apiserver serves the events.orch.io/v1 API over HTTPS, storing objects in etcd
// (an embedded one by default).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/benbjohnson/clock"
	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apiserver/app"
)

func main() {
	o := app.NewOptions()
	fs := pflag.NewFlagSet("orch-apiserver", pflag.ContinueOnError)
	o.AddFlags(fs)
	showVersion := fs.Bool("version", false, "Print version information and quit.")
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, o, clock.New(), nil); err != nil {
		klog.ErrorS(err, "orch-apiserver stopped")
		klog.Flush()
		os.Exit(1)
	}
}
