package value

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Prefixes stored values carry, as Kubernetes writes them with orch in place of k8s, so an operator
// can tell from etcd which provider (and, after it, which key) wrote a value.
const (
	EncryptedPrefix = "orch:enc:"
	AESCBCPrefix    = "orch:enc:aescbc:v1:"
	AESGCMPrefix    = "orch:enc:aesgcm:v1:"
	SecretboxPrefix = "orch:enc:secretbox:v1:"
	KMSv1Prefix     = "orch:enc:kms:v1:"
	KMSv2Prefix     = "orch:enc:kms:v2:"
)

// Transformer turns a value into its stored form and back. ad is the authenticated data: the
// storage key, so a value copied under another key does not decrypt there.
type Transformer interface {
	// TransformFromStorage returns the plain value. stale reports that the value was not written
	// by the transformer that writes now (an older key or provider): it should be written again.
	TransformFromStorage(ctx context.Context, data, ad []byte) (out []byte, stale bool, err error)
	// TransformToStorage returns the stored form of data.
	TransformToStorage(ctx context.Context, data, ad []byte) ([]byte, error)
}

// PrefixTransformer is a transformer and the prefix that marks the values it wrote.
type PrefixTransformer struct {
	Prefix      []byte
	Transformer Transformer
}

// ErrNoMatchingPrefix: no configured provider reads a stored value.
var ErrNoMatchingPrefix = errors.New("no matching prefix found")

type prefixTransformers struct {
	transformers []PrefixTransformer
	err          error
}

// NewPrefixTransformers reads a value with the first transformer whose prefix it carries (the
// prefix stripped) and writes with the first transformer, prefix added. err is returned when no
// prefix matches. It must be given at least one transformer.
func NewPrefixTransformers(err error, transformers ...PrefixTransformer) Transformer {
	return &prefixTransformers{transformers: transformers, err: err}
}

func (t *prefixTransformers) TransformFromStorage(ctx context.Context, data, ad []byte) ([]byte, bool, error) {
	var errs []error
	for i, pt := range t.transformers {
		if !bytes.HasPrefix(data, pt.Prefix) {
			continue
		}
		out, stale, err := pt.Transformer.TransformFromStorage(ctx, data[len(pt.Prefix):], ad)
		// identity (no prefix) refuses encrypted data; a later provider may read it. Two providers
		// of one kind (a key being rotated to, another away from) share a prefix, so a failure
		// never ends the search either.
		if err != nil {
			if len(pt.Prefix) > 0 {
				errs = append(errs, err)
			}
			continue
		}
		return out, stale || i != 0, nil
	}
	if len(errs) > 0 {
		return nil, false, errors.Join(errs...)
	}
	return nil, false, t.err
}

func (t *prefixTransformers) TransformToStorage(ctx context.Context, data, ad []byte) ([]byte, error) {
	pt := t.transformers[0]
	out, err := pt.Transformer.TransformToStorage(ctx, data, ad)
	if err != nil {
		return nil, err
	}
	stored := make([]byte, 0, len(pt.Prefix)+len(out))
	stored = append(stored, pt.Prefix...)
	return append(stored, out...), nil
}

// identity stores values as they are, refusing on read a value another provider encrypted.
type identity struct{}

// Identity is the identity provider's transformer.
var Identity Transformer = identity{}

func (identity) TransformFromStorage(_ context.Context, data, _ []byte) ([]byte, bool, error) {
	if bytes.HasPrefix(data, []byte(EncryptedPrefix)) {
		return nil, false, errors.New("identity transformer tried to read encrypted data")
	}
	return data, false, nil
}

func (identity) TransformToStorage(_ context.Context, data, _ []byte) ([]byte, error) {
	return data, nil
}

// DescribePrefix names the prefix of a stored value for an error: through the key or plugin name
// for an encrypted value ("orch:enc:aescbc:v1:key1:"), or says the value is not encrypted.
func DescribePrefix(data []byte) string {
	if !bytes.HasPrefix(data, []byte(EncryptedPrefix)) {
		return "no encryption prefix (the value is stored unencrypted)"
	}
	// orch:enc:<provider>:<version>:<key or plugin name>: ends at the fifth colon.
	head := data[:min(len(data), 256)]
	colons := 0
	for i, b := range head {
		if b == ':' {
			if colons++; colons == 5 {
				return fmt.Sprintf("%q", head[:i+1])
			}
		}
	}
	return fmt.Sprintf("%q", head[:min(len(head), len(EncryptedPrefix)+32)])
}

// ResourceTransformers gives the transformer of each resource.
type ResourceTransformers interface {
	TransformerFor(resource schema.GroupResource) Transformer
}
