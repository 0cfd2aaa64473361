package value

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// gcm is AES-GCM with a random 12-byte nonce before the sealed value, the storage key as
// authenticated data (Kubernetes' aesgcm provider).
type gcm struct {
	aead cipher.AEAD
}

// NewGCM returns the aesgcm transformer of a key of 16, 24 or 32 bytes. Random nonces make a key
// safe for about 2^32 writes: keys must be rotated, as Kubernetes documents.
func NewGCM(key []byte) (Transformer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &gcm{aead: aead}, nil
}

func (t *gcm) TransformFromStorage(_ context.Context, data, ad []byte) ([]byte, bool, error) {
	n := t.aead.NonceSize()
	if len(data) < n {
		return nil, false, errors.New("the stored data was shorter than the required size")
	}
	out, err := t.aead.Open(nil, data[:n], data[n:], ad)
	return out, false, err
}

func (t *gcm) TransformToStorage(_ context.Context, data, ad []byte) ([]byte, error) {
	n := t.aead.NonceSize()
	out := make([]byte, n, n+len(data)+t.aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		return nil, fmt.Errorf("failed to write nonce for AES-GCM: %w", err)
	}
	return t.aead.Seal(out, out[:n], data, ad), nil
}

// cbc is AES-CBC with a random IV and PKCS#7 padding (Kubernetes' aescbc provider). It does not
// authenticate: Kubernetes keeps it for compatibility and so does orch.
type cbc struct {
	block cipher.Block
}

// NewCBC returns the aescbc transformer of a 32-byte key.
func NewCBC(key []byte) (Transformer, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return &cbc{block: block}, nil
}

var (
	errInvalidBlockSize    = errors.New("the stored data is not a multiple of the block size")
	errInvalidPKCS7Data    = errors.New("invalid PKCS7 data (empty or not padded)")
	errInvalidPKCS7Padding = errors.New("invalid padding on input")
)

func (t *cbc) TransformFromStorage(_ context.Context, data, _ []byte) ([]byte, bool, error) {
	bs := aes.BlockSize
	if len(data) < bs {
		return nil, false, errors.New("the stored data was shorter than the required size")
	}
	iv, data := data[:bs], data[bs:]
	if len(data)%bs != 0 {
		return nil, false, errInvalidBlockSize
	}
	out := make([]byte, len(data))
	cipher.NewCBCDecrypter(t.block, iv).CryptBlocks(out, data)
	if len(out) == 0 {
		return nil, false, errInvalidPKCS7Data
	}
	pad := int(out[len(out)-1])
	if pad == 0 || pad > len(out) {
		return nil, false, errInvalidPKCS7Data
	}
	if !bytes.Equal(out[len(out)-pad:], bytes.Repeat([]byte{byte(pad)}, pad)) {
		return nil, false, errInvalidPKCS7Padding
	}
	return out[:len(out)-pad], false, nil
}

func (t *cbc) TransformToStorage(_ context.Context, data, _ []byte) ([]byte, error) {
	bs := aes.BlockSize
	pad := bs - len(data)%bs
	out := make([]byte, bs+len(data)+pad)
	if _, err := rand.Read(out[:bs]); err != nil {
		return nil, errors.New("unable to read sufficient random bytes")
	}
	copy(out[bs:], data)
	copy(out[bs+len(data):], bytes.Repeat([]byte{byte(pad)}, pad))
	cipher.NewCBCEncrypter(t.block, out[:bs]).CryptBlocks(out[bs:], out[bs:])
	return out, nil
}

// SeedSize is the size of an extended-nonce seed and of the info that derives each write's key.
const SeedSize = 32

// extendedNonceGCM derives a fresh AES-256 key per write, HKDF-SHA256(seed, info) with 32 random
// info bytes stored before the AES-GCM value, so one seed (a KMS v2 DEK source) never wears out.
type extendedNonceGCM struct {
	seed []byte
}

// NewHKDFExtendedNonceGCM returns Kubernetes' KMS v2 data transformer for a seed of SeedSize bytes.
func NewHKDFExtendedNonceGCM(seed []byte) (Transformer, error) {
	if len(seed) < SeedSize {
		return nil, fmt.Errorf("invalid seed length %d used for key generation", len(seed))
	}
	return &extendedNonceGCM{seed: seed}, nil
}

func (e *extendedNonceGCM) derive(info []byte) (Transformer, error) {
	key, err := hkdf.Expand(sha256.New, e.seed, string(info), SeedSize)
	if err != nil {
		return nil, fmt.Errorf("failed to KDF expand seed with info: %w", err)
	}
	return NewGCM(key)
}

func (e *extendedNonceGCM) TransformFromStorage(ctx context.Context, data, ad []byte) ([]byte, bool, error) {
	if len(data) < SeedSize {
		return nil, false, errors.New("the stored data was shorter than the required size")
	}
	t, err := e.derive(data[:SeedSize])
	if err != nil {
		return nil, false, fmt.Errorf("failed to derive read key from KDF: %w", err)
	}
	return t.TransformFromStorage(ctx, data[SeedSize:], ad)
}

func (e *extendedNonceGCM) TransformToStorage(ctx context.Context, data, ad []byte) ([]byte, error) {
	info := make([]byte, SeedSize)
	if _, err := rand.Read(info); err != nil {
		return nil, fmt.Errorf("failed to generate info for KDF: %w", err)
	}
	t, err := e.derive(info)
	if err != nil {
		return nil, fmt.Errorf("failed to derive write key from KDF: %w", err)
	}
	out, err := t.TransformToStorage(ctx, data, ad)
	if err != nil {
		return nil, err
	}
	return append(info, out...), nil
}
