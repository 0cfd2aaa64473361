package encryptionconfig

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"reflect"
	"time"

	"k8s.io/klog/v2"

	"orch.io/orch/components/apis/apiserver/config"
	apiv1 "orch.io/orch/components/apis/apiserver/v1"
)

// Reloader follows an encryption configuration file for
// --encryption-provider-config-automatic-reload: it reads the file on the clock and, when its
// content changed and is valid with every KMS provider healthy, puts it in force without a
// restart. A change that fails is logged and the configuration in force stays.
type Reloader struct {
	path    string
	dynamic *Dynamic
	opts    Options
	hash    [sha256.Size]byte
	// refuse names settings the server refuses (KMS v1), as at start.
	refuse func(*config.Encryption) error
}

// NewReloader follows path, from which loaded, the configuration in force in dynamic, was read.
// The file is read again: only content that still says what was loaded counts as in force, so a
// change made meanwhile is put in force at the first read.
func NewReloader(path string, loaded *apiv1.EncryptionConfiguration, dynamic *Dynamic, o Options, refuse func(*config.Encryption) error) (*Reloader, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := &Reloader{path: path, dynamic: dynamic, opts: o, refuse: refuse}
	if again, err := config.ParseEncryption(path, data); err == nil && reflect.DeepEqual(again.Config, loaded) {
		r.hash = sha256.Sum256(data)
	}
	return r, nil
}

// Run checks the file every interval until ctx ends.
func (r *Reloader) Run(ctx context.Context, interval time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.opts.Clock.After(interval):
		}
		if changed, err := r.Sync(ctx); err != nil {
			klog.ErrorS(err, "Encryption configuration not reloaded; the one in force stays", "file", r.path)
		} else if changed {
			klog.InfoS("Encryption configuration reloaded", "file", r.path)
		}
	}
}

// Sync puts the file's configuration in force if its content changed, reporting whether it did.
func (r *Reloader) Sync(ctx context.Context) (bool, error) {
	data, err := os.ReadFile(r.path)
	if err != nil {
		return false, err
	}
	hash := sha256.Sum256(data)
	if hash == r.hash {
		return false, nil
	}
	enc, err := config.ParseEncryption(r.path, data)
	if err != nil {
		return false, err
	}
	if err := r.refuse(enc); err != nil {
		return false, err
	}
	next, err := Build(enc.Config, r.opts)
	if err != nil {
		return false, err
	}
	// As Kubernetes does, a configuration whose KMS plugins are not healthy is not put in force:
	// it could not write.
	var errs []error
	for _, c := range next.HealthChecks() {
		if err := c.Check(ctx); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		next.Stop()
		return false, err
	}
	old := r.dynamic.Set(next)
	r.hash = hash
	r.opts.Clock.AfterFunc(2*old.kmsTimeouts, old.Stop)
	return true, nil
}
