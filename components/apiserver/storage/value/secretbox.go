package value

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"golang.org/x/crypto/nacl/secretbox"
)

const secretboxNonceSize = 24

// secretboxTransformer is XSalsa20-Poly1305 with a random 24-byte nonce before the box
// (Kubernetes' secretbox provider, which does not bind the storage key).
type secretboxTransformer struct {
	key [32]byte
}

// NewSecretbox returns the secretbox transformer of a 32-byte key.
func NewSecretbox(key []byte) (Transformer, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("expected key size 32 for secretbox provider, got %v", len(key))
	}
	t := &secretboxTransformer{}
	copy(t.key[:], key)
	return t, nil
}

func (t *secretboxTransformer) TransformFromStorage(_ context.Context, data, _ []byte) ([]byte, bool, error) {
	if len(data) < secretbox.Overhead+secretboxNonceSize {
		return nil, false, errors.New("the stored data was shorter than the required size")
	}
	var nonce [secretboxNonceSize]byte
	copy(nonce[:], data)
	out, ok := secretbox.Open(nil, data[secretboxNonceSize:], &nonce, &t.key)
	if !ok {
		return nil, false, errors.New("output array was not large enough for encryption")
	}
	return out, false, nil
}

func (t *secretboxTransformer) TransformToStorage(_ context.Context, data, _ []byte) ([]byte, error) {
	var nonce [secretboxNonceSize]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return nil, errors.New("unable to read sufficient random bytes")
	}
	return secretbox.Seal(nonce[:], data, &nonce, &t.key), nil
}
