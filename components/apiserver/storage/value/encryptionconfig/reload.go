package encryptionconfig

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/klog/v2"

	"orch.io/orch/components/apis/apiserver/config"
	apiv1 "orch.io/orch/components/apis/apiserver/v1"
	"orch.io/orch/components/apiserver/storage/value"
	"orch.io/orch/components/reload"
)

// Reloader follows an encryption configuration file for
// --encryption-provider-config-automatic-reload: it reads the file on the clock and, when its
// content changed and is valid with every KMS provider healthy, puts it in force without a
// restart. A change that fails is logged and the configuration in force stays; as Kubernetes'
// controller does, the same content is tried again at the next read. Lookups take no lock: they
// are on every storage operation.
type Reloader struct {
	*reload.Reloader[Transformers]
}

// NewReloader follows path, read every interval once Run runs. loaded, from which initial was
// built, is the configuration read from it at start; refuse names settings the server refuses
// (KMS v1), as at start.
func NewReloader(path string, loaded *apiv1.EncryptionConfiguration, initial *Transformers, o Options, interval time.Duration, refuse func(*config.Encryption) error) *Reloader {
	parse := func(data []byte) (*apiv1.EncryptionConfiguration, error) {
		enc, err := config.ParseEncryption(path, data)
		if err != nil {
			return nil, err
		}
		return enc.Config, nil
	}
	r := reload.New(reload.Options[Transformers]{
		File: path, Interval: interval, Clock: o.Clock,
		Load: func(_ context.Context, data []byte, _ *Transformers) (*Transformers, error) {
			enc, err := config.ParseEncryption(path, data)
			if err == nil {
				err = refuse(enc)
			}
			if err != nil {
				return nil, reload.Retry(err)
			}
			next, err := Build(enc.Config, o)
			if err != nil {
				return nil, reload.Retry(err)
			}
			return next, nil
		},
		// As Kubernetes does, a configuration whose KMS plugins are not healthy is not put in
		// force: it could not write.
		Ready: func(ctx context.Context, next *Transformers) error {
			var errs []error
			for _, c := range next.HealthChecks() {
				if err := c.Check(ctx); err != nil {
					errs = append(errs, fmt.Errorf("%s: %w", c.Name, err))
				}
			}
			return errors.Join(errs...)
		},
		Stop:  (*Transformers).Stop,
		Grace: func(old *Transformers) time.Duration { return 2 * old.kmsTimeouts },
		Log: func(o reload.Outcome[Transformers]) {
			if o.Err != nil {
				klog.ErrorS(o.Err, "Encryption configuration not reloaded; the one in force stays", "file", path)
				return
			}
			klog.InfoS("Encryption configuration reloaded", "file", path)
		},
	}, initial, reload.Applied(path, loaded, parse))
	return &Reloader{r}
}

// TransformerFor is the resource's transformer in the configuration in force.
func (r *Reloader) TransformerFor(gr schema.GroupResource) value.Transformer {
	return r.Current().TransformerFor(gr)
}

// HealthChecks are the checks of the configuration in force.
func (r *Reloader) HealthChecks() []HealthCheck { return r.Current().HealthChecks() }

// Stop stops the configuration in force.
func (r *Reloader) Stop() { r.Current().Stop() }
