package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apis/apiserver/config"
	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/apiserver/storage/transform"
	"orch.io/orch/components/apiserver/storage/value"
	"orch.io/orch/components/apiserver/storage/value/encryptionconfig"
)

// encryptAtRest wraps store so every resource's values pass through the providers of
// --encryption-provider-config on their way to and from etcd. Without the flag the store is used
// as it is. It returns the providers' health checks and what stops their background work.
// With --encryption-provider-config-automatic-reload the file is followed until ctx ends.
func encryptAtRest(ctx context.Context, o *Options, files *configFiles, clk clock.Clock, store storage.Interface) (storage.Interface, func() []server.HealthCheck, func(), error) {
	if files.encryption == nil {
		if o.EncryptionProviderConfigAutomaticReload {
			return nil, nil, nil, errors.New("--encryption-provider-config-automatic-reload must be set with --encryption-provider-config")
		}
		return store, nil, func() {}, nil
	}
	opts := encryptionconfig.Options{Clock: clk}
	built, err := encryptionconfig.Build(files.encryption.Config, opts)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--encryption-provider-config %s: %w", files.encryption.File, err)
	}
	var providers interface {
		value.ResourceTransformers
		HealthChecks() []encryptionconfig.HealthCheck
		Stop()
	} = built
	if o.EncryptionProviderConfigAutomaticReload {
		refuse := func(e *config.Encryption) error {
			return errors.Join((&configFiles{encryption: e}).encryptionUnsupported()...)
		}
		reloader := encryptionconfig.NewReloader(files.encryption.File, files.encryption.Config, built, opts, o.EncryptionReloadInterval, refuse)
		go reloader.Run(ctx)
		providers = reloader
	}
	checks := func() []server.HealthCheck {
		var out []server.HealthCheck
		for _, c := range providers.HealthChecks() {
			out = append(out, server.HealthCheck{Name: c.Name, Check: c.Check})
		}
		return out
	}
	return transform.New(store, providers), checks, providers.Stop, nil
}

// encryptionUnsupported names the providers of the encryption file this server refuses: KMS v1,
// which Kubernetes deprecated and turns off by default.
func (c *configFiles) encryptionUnsupported() []error {
	e := c.encryption
	if e == nil {
		return nil
	}
	var errs []error
	for i, r := range e.Config.Resources {
		for j, p := range r.Providers {
			if k := p.KMS; k != nil && (k.APIVersion == "" || k.APIVersion == "v1") {
				errs = append(errs, fmt.Errorf("--encryption-provider-config %s: resources[%d].providers[%d].kms (%q): %s", e.File, i, j, k.Name, encryptionconfig.KMSv1Deprecated))
			}
		}
	}
	return errs
}
