// Command orch-kms-plugin is orch's reference KMS v2 plugin: it wraps orch-apiserver's data
// encryption keys with AES-GCM under keys from a local file, on a unix socket.
//
//	orch-kms-plugin --generate-key > /etc/orch/kms-keys
//	orch-kms-plugin --listen unix:///var/run/orch-kms.sock --key-file /etc/orch/kms-keys
package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/pflag"

	"orch.io/orch/components/kmsplugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, nil); err != nil {
		fmt.Fprintln(os.Stderr, "orch-kms-plugin:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends; ready, if set, is called once the socket accepts connections.
func run(ctx context.Context, args []string, stdout io.Writer, ready func()) error {
	fs := pflag.NewFlagSet("orch-kms-plugin", pflag.ContinueOnError)
	listen := fs.String("listen", "", "Unix socket to serve the KMS v2 API on: a path or unix:///path. orch-apiserver's EncryptionConfiguration names it as the kms provider's endpoint.")
	keyFile := fs.String("key-file", "", "File of base64-encoded 32-byte AES keys, one per line. The first wraps new data keys; all unwrap. Read again on every status call, so a new first key is picked up without a restart.")
	generate := fs.Bool("generate-key", false, "Print a new random key, base64-encoded, and exit.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *generate {
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return err
		}
		_, err := fmt.Fprintln(stdout, base64.StdEncoding.EncodeToString(key))
		return err
	}
	var errs []error
	if *listen == "" {
		errs = append(errs, errors.New("--listen is required"))
	}
	if *keyFile == "" {
		errs = append(errs, errors.New("--key-file is required"))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	plugin, err := kmsplugin.New(*keyFile)
	if err != nil {
		return fmt.Errorf("--key-file: %w", err)
	}
	l, err := kmsplugin.Listen(*listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	if ready != nil {
		ready()
	}
	return kmsplugin.Serve(ctx, l, plugin)
}
