package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"

	jose "github.com/go-jose/go-jose/v4"
	"k8s.io/client-go/util/keyutil"
)

// algorithms are the signatures a token may carry: Kubernetes' RS256 for RSA keys and ES256,
// ES384, ES512 for the three ECDSA curves.
var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.ES256, jose.ES384, jose.ES512}

// LoadSigningKey reads the PEM private key of --service-account-signing-key-file.
func LoadSigningKey(path string) (crypto.Signer, error) {
	key, err := keyutil.PrivateKeyFromFile(path)
	if err != nil {
		return nil, err
	}
	switch k := key.(type) {
	case *rsa.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		if _, err := ecdsaAlgorithm(k.Curve); err != nil {
			return nil, err
		}
		return k, nil
	}
	return nil, fmt.Errorf("unknown private key type %T, must be *rsa.PrivateKey or *ecdsa.PrivateKey", key)
}

// LoadPublicKeys reads the PEM keys of one --service-account-key-file: public keys,
// certificates, or private keys whose public halves are taken.
func LoadPublicKeys(path string) ([]crypto.PublicKey, error) {
	keys, err := keyutil.PublicKeysFromFile(path)
	if err != nil {
		return nil, err
	}
	out := make([]crypto.PublicKey, len(keys))
	for i, k := range keys {
		out[i] = k
	}
	return out, nil
}

func ecdsaAlgorithm(c elliptic.Curve) (jose.SignatureAlgorithm, error) {
	switch c {
	case elliptic.P256():
		return jose.ES256, nil
	case elliptic.P384():
		return jose.ES384, nil
	case elliptic.P521():
		return jose.ES512, nil
	}
	return "", errors.New("unknown private key curve, must be 256, 384, or 521")
}

// keyID is Kubernetes' keyIDFromPublicKey: the unpadded base64url SHA-256 of the key's PKIX DER.
func keyID(public crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(public)
	if err != nil {
		return "", fmt.Errorf("failed to serialize public key to DER format: %v", err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}
