package encryptionconfig

import (
	"context"
	"fmt"

	"github.com/benbjohnson/clock"

	apiv1 "orch.io/orch/components/apis/apiserver/v1"
	"orch.io/orch/components/apiserver/storage/value"
	"orch.io/orch/components/apiserver/storage/value/kmsv2"
)

// Options are what Build needs besides the configuration.
type Options struct {
	// Clock paces KMS status polls, DEK expiry and call timeouts.
	Clock clock.Clock
}

// KMSv1Deprecated is Kubernetes' refusal of KMS v1, which it turns off by default; orch has no
// gate to turn it back on.
const KMSv1Deprecated = "KMSv1 is deprecated and will only receive security updates going forward. Use KMSv2 instead. orch-apiserver does not serve it (Kubernetes turns it off by default, behind --feature-gates=KMSv1=true)"

// kmsProvider connects a KMS v2 provider to its plugin; the connection and status polls last
// until ctx ends. A plugin that is down does not fail the start: the provider is unhealthy, and
// writes fail, until it answers.
func kmsProvider(ctx context.Context, k *apiv1.KMSConfiguration, o Options) (value.PrefixTransformer, func(context.Context) error, error) {
	if k.APIVersion == "" || k.APIVersion == "v1" {
		return value.PrefixTransformer{}, nil, fmt.Errorf("kms %q: %s", k.Name, KMSv1Deprecated)
	}
	service, closeConn, err := kmsv2.Dial(k.Endpoint, k.Timeout.Duration, o.Clock)
	if err != nil {
		return value.PrefixTransformer{}, nil, fmt.Errorf("could not configure KMSv2-Plugin's probe %q, error: %w", k.Name, err)
	}
	go func() {
		<-ctx.Done()
		_ = closeConn()
	}()
	p := kmsv2.NewProvider(ctx, k.Name, service, o.Clock)
	return value.PrefixTransformer{Prefix: []byte(value.KMSv2Prefix + k.Name + ":"), Transformer: p.Transformer()}, p.Check, nil
}
