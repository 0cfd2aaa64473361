package encryptionconfig

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	apiv1 "orch.io/orch/components/apis/apiserver/v1"
	"orch.io/orch/components/apiserver/storage/value"
)

// HealthCheck is a named check of an encryption provider, for /healthz and /readyz.
type HealthCheck struct {
	Name  string
	Check func(context.Context) error
}

// Transformers are the transformers one EncryptionConfiguration gives each resource.
type Transformers struct {
	byResource map[schema.GroupResource]value.Transformer
	checks     []HealthCheck
	stop       context.CancelFunc
	// kmsTimeouts sums the providers' KMS timeouts: a replaced configuration is stopped twice
	// that long after the swap, when no call through it can still be running (Kubernetes' grace).
	kmsTimeouts time.Duration
}

var anyGroupAnyResource = schema.GroupResource{Group: "*", Resource: "*"}

// TransformerFor resolves a resource as Kubernetes does: its own entry, then its group's wildcard
// (*.group, or *. for the core group), then *.*; a resource no entry names is stored unencrypted.
// Validation refuses an entry masked by an earlier one, so this order is the file's order.
func (t *Transformers) TransformerFor(gr schema.GroupResource) value.Transformer {
	for _, candidate := range []schema.GroupResource{gr, {Group: gr.Group, Resource: "*"}, anyGroupAnyResource} {
		if tr, ok := t.byResource[candidate]; ok {
			return tr
		}
	}
	return value.Identity
}

// HealthChecks are the checks of the configuration's KMS providers, kms-provider-N in file order.
func (t *Transformers) HealthChecks() []HealthCheck { return t.checks }

// Stop ends what the transformers run in the background (KMS connections and status polls).
func (t *Transformers) Stop() {
	if t.stop != nil {
		t.stop()
	}
}

// Build makes the transformers of a configuration that config.LoadEncryption checked. Background
// work (KMS plugins) lives until Stop.
func Build(cfg *apiv1.EncryptionConfiguration, o Options) (*Transformers, error) {
	ctx, cancel := context.WithCancel(context.Background())
	t := &Transformers{byResource: map[schema.GroupResource]value.Transformer{}, stop: cancel}
	lists := map[schema.GroupResource][]value.PrefixTransformer{}
	kmsIndex := 0
	for i, rc := range cfg.Resources {
		var providers []value.PrefixTransformer
		for j, p := range rc.Providers {
			pt, check, err := provider(ctx, p, o)
			if err != nil {
				cancel()
				return nil, fmt.Errorf("resources[%d].providers[%d]: %w", i, j, err)
			}
			if check != nil {
				t.kmsTimeouts += p.KMS.Timeout.Duration
				t.checks = append(t.checks, HealthCheck{Name: fmt.Sprintf("kms-provider-%d", kmsIndex), Check: check})
				kmsIndex++
			}
			providers = append(providers, pt)
		}
		for _, r := range rc.Resources {
			gr := schema.ParseGroupResource(r)
			lists[gr] = append(lists[gr], providers...)
		}
	}
	for gr, list := range lists {
		t.byResource[gr] = value.NewPrefixTransformers(value.ErrNoMatchingPrefix, list...)
	}
	return t, nil
}

func provider(ctx context.Context, p apiv1.ProviderConfiguration, o Options) (value.PrefixTransformer, func(context.Context) error, error) {
	switch {
	case p.AESGCM != nil:
		pt, err := keyed(p.AESGCM.Keys, value.AESGCMPrefix, value.NewGCM, "AES")
		return pt, nil, err
	case p.AESCBC != nil:
		pt, err := keyed(p.AESCBC.Keys, value.AESCBCPrefix, value.NewCBC, "AES")
		return pt, nil, err
	case p.Secretbox != nil:
		pt, err := keyed(p.Secretbox.Keys, value.SecretboxPrefix, value.NewSecretbox, "Secretbox")
		return pt, nil, err
	case p.Identity != nil:
		return value.PrefixTransformer{Prefix: []byte{}, Transformer: value.Identity}, nil, nil
	case p.KMS != nil:
		return kmsProvider(ctx, p.KMS, o)
	}
	return value.PrefixTransformer{}, nil, errors.New("provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity")
}

// keyed is a provider with named keys: each value carries the provider's prefix then the name of
// the key that wrote it; the first key writes, every key reads.
func keyed(keys []apiv1.Key, prefix string, newTransformer func([]byte) (value.Transformer, error), kind string) (value.PrefixTransformer, error) {
	var list []value.PrefixTransformer
	for _, k := range keys {
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			return value.PrefixTransformer{}, fmt.Errorf("could not obtain secret for named key %s: %w", k.Name, err)
		}
		tr, err := newTransformer(secret)
		if err != nil {
			return value.PrefixTransformer{}, fmt.Errorf("error while creating transformer for named key %s: %w", k.Name, err)
		}
		list = append(list, value.PrefixTransformer{Prefix: []byte(k.Name + ":"), Transformer: tr})
	}
	if len(list) == 0 {
		return value.PrefixTransformer{}, fmt.Errorf("%s provider has no valid keys", kind)
	}
	return value.PrefixTransformer{
		Prefix:      []byte(prefix),
		Transformer: value.NewPrefixTransformers(fmt.Errorf("no matching key was found for the provided %s transformer", kind), list...),
	}, nil
}
