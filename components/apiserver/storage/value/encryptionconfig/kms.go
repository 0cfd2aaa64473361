package encryptionconfig

import (
	"context"
	"errors"
	"fmt"

	"github.com/benbjohnson/clock"

	apiv1 "orch.io/orch/components/apis/apiserver/v1"
	"orch.io/orch/components/apiserver/storage/value"
)

// Options are what Build needs besides the configuration.
type Options struct {
	// Clock paces KMS status polls, DEK expiry and call timeouts.
	Clock clock.Clock
}

// KMSv1Deprecated is Kubernetes' refusal of KMS v1, which it turns off by default; orch has no
// gate to turn it back on.
const KMSv1Deprecated = "KMSv1 is deprecated and will only receive security updates going forward. Use KMSv2 instead. orch-apiserver does not serve it (Kubernetes turns it off by default, behind --feature-gates=KMSv1=true)"

func kmsProvider(_ context.Context, k *apiv1.KMSConfiguration, _ Options) (value.PrefixTransformer, func(context.Context) error, error) {
	if k.APIVersion == "" || k.APIVersion == "v1" {
		return value.PrefixTransformer{}, nil, fmt.Errorf("kms %q: %s", k.Name, KMSv1Deprecated)
	}
	return value.PrefixTransformer{}, nil, errors.New("kms v2 is not wired yet")
}
