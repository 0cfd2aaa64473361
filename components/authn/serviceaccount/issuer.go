package serviceaccount

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rsa"
	"fmt"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Issuer signs service account tokens as iss, Kubernetes' JWTTokenGenerator.
type Issuer struct {
	iss    string
	signer jose.Signer
}

// NewIssuer signs with key (RSA or ECDSA on P-256, P-384 or P-521), the header naming its key id.
func NewIssuer(iss string, key crypto.Signer) (*Issuer, error) {
	var alg jose.SignatureAlgorithm
	switch k := key.(type) {
	case *rsa.PrivateKey:
		alg = jose.RS256
	case *ecdsa.PrivateKey:
		var err error
		if alg, err = ecdsaAlgorithm(k.Curve); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown private key type %T, must be *rsa.PrivateKey or *ecdsa.PrivateKey", key)
	}
	kid, err := keyID(key.Public())
	if err != nil {
		return nil, fmt.Errorf("failed to derive keyID: %v", err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: &jose.JSONWebKey{Algorithm: string(alg), Key: key, KeyID: kid, Use: "sig"}}, nil)
	if err != nil {
		return nil, fmt.Errorf("failed to create signer: %v", err)
	}
	return &Issuer{iss: iss, signer: signer}, nil
}

// Token is a token for b, issued now, good for expiration, for audiences.
func (i *Issuer) Token(b Binding, now time.Time, expiration time.Duration, audiences []string) (string, error) {
	public, private := claims(b, now, expiration, audiences)
	// Claims apply in reverse precedence, as Kubernetes' GenerateToken merges them.
	return jwt.Signed(i.signer).Claims(private).Claims(public).Claims(&jwt.Claims{Issuer: i.iss}).Serialize()
}
