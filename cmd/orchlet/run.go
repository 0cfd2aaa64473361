package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"

	"orch.io/orch/components/orchlet/host"
	"orch.io/orch/components/orchlet/options"
)

// lockRetry is how often a lock file held by another process is tried again.
const lockRetry = time.Second

// Run takes the lock file, runs the start-up checks and logs the effective configuration at -v=2.
// With --runonce and no pod source there is nothing to run and it returns; otherwise it runs until ctx
// ends, or until another process contends for the lock under --exit-on-lock-contention.
func Run(ctx context.Context, o *options.Options, h host.Host, clk clock.Clock) error {
	klog.InfoS("orchlet starting", "version", o.Version.GitVersion)
	lock, err := takeLock(ctx, o, h, clk)
	if err != nil {
		return err
	}
	var contended <-chan struct{}
	if lock != nil {
		defer lock.Release()
		if o.Flags.ExitOnLockContention {
			contended = lock.Contended()
		}
	}
	c := o.Config
	if err := host.Check(h, host.Requirements{
		FailSwapOn:            c.FailSwapOn,
		FailCgroupV1:          o.Flags.FailCgroupV1,
		ProtectKernelDefaults: c.ProtectKernelDefaults,
	}); err != nil {
		return err
	}
	if v := klog.V(2); v.Enabled() {
		cfg, err := yaml.Marshal(c)
		if err != nil {
			return fmt.Errorf("rendering the effective configuration: %w", err)
		}
		v.InfoS("Effective configuration", "config", string(cfg))
		v.InfoS("Command-line-only options", "flags", fmt.Sprintf("%+v", o.Flags))
	}
	if c.RunOnce && c.StaticPodPath == "" && c.StaticPodURL == "" && o.Flags.Orchconfig == "" {
		klog.InfoS("orchlet run once: configuration valid, start-up checks passed, no pod source configured")
		return nil
	}
	klog.InfoS("orchlet started: configuration valid, start-up checks passed")
	select {
	case <-ctx.Done():
		klog.InfoS("orchlet stopping", "reason", context.Cause(ctx))
	case <-contended:
		klog.InfoS("orchlet exiting: another process contends for the lock file", "path", o.Flags.LockFile)
	}
	return nil
}

// takeLock takes --lock-file if set. A lock held elsewhere is refused under --exit-on-lock-contention
// and waited for otherwise.
func takeLock(ctx context.Context, o *options.Options, h host.Host, clk clock.Clock) (host.Lock, error) {
	path := o.Flags.LockFile
	if path == "" {
		return nil, nil
	}
	var ticker *clock.Ticker
	for {
		lock, err := h.Lock(path)
		switch {
		case err == nil:
			return lock, nil
		case !errors.Is(err, host.ErrLocked):
			return nil, fmt.Errorf("--lock-file: %s: %w", path, err)
		case o.Flags.ExitOnLockContention:
			return nil, fmt.Errorf("--lock-file: %s is held by another process and --exit-on-lock-contention is set", path)
		}
		if ticker == nil {
			klog.InfoS("Waiting for the lock file held by another process", "path", path)
			ticker = clk.Ticker(lockRetry)
			defer ticker.Stop()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("--lock-file: %s: gave up waiting: %w", path, context.Cause(ctx))
		case <-ticker.C:
		}
	}
}
