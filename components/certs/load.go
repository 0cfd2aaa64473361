package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
)

// LoadServing reads a serving certificate (PEM, the leaf first, intermediates after it) and its
// private key (PEM: PKCS#8, PKCS#1 RSA or SEC 1 EC). Errors name the file at fault: a file that is
// missing or unreadable (errors.Is(err, fs.ErrNotExist) for a missing one), holds no certificate or
// key, does not parse, or a key that does not match the certificate. An expired certificate is
// not an error here. The returned certificate has Leaf set.
func LoadServing(certFile, keyFile string) (tls.Certificate, error) {
	if certFile == "" || keyFile == "" {
		return tls.Certificate{}, errors.New("certs: a serving certificate file and key file must both be given")
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: reading serving certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: reading serving key: %w", err)
	}

	var chain [][]byte
	for rest := certPEM; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			chain = append(chain, block.Bytes)
		}
	}
	if len(chain) == 0 {
		return tls.Certificate{}, fmt.Errorf("certs: serving certificate %q: no PEM CERTIFICATE block found", certFile)
	}
	leaf, err := x509.ParseCertificate(chain[0])
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: serving certificate %q: %w", certFile, err)
	}
	for i, der := range chain[1:] {
		if _, err := x509.ParseCertificate(der); err != nil {
			return tls.Certificate{}, fmt.Errorf("certs: serving certificate %q, certificate %d: %w", certFile, i+2, err)
		}
	}

	key, err := parseKey(keyPEM)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("certs: serving key %q: %w", keyFile, err)
	}
	if !publicKeyMatches(leaf.PublicKey, key) {
		return tls.Certificate{}, fmt.Errorf("certs: serving key %q does not match the certificate %q", keyFile, certFile)
	}
	return tls.Certificate{Certificate: chain, PrivateKey: key, Leaf: leaf}, nil
}

func parseKey(keyPEM []byte) (crypto.Signer, error) {
	for rest := keyPEM; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("no PEM PRIVATE KEY block found")
		}
		if block.Type != "PRIVATE KEY" && !strings.HasSuffix(block.Type, " PRIVATE KEY") {
			continue
		}
		var key any
		var err error
		switch block.Type {
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		default:
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		}
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", block.Type, err)
		}
		switch k := key.(type) {
		case *rsa.PrivateKey:
			return k, nil
		case *ecdsa.PrivateKey:
			return k, nil
		case ed25519.PrivateKey:
			return k, nil
		}
		return nil, fmt.Errorf("unsupported private key type %T", key)
	}
}

func publicKeyMatches(pub any, key crypto.Signer) bool {
	p, ok := key.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && p.Equal(pub)
}

// TLSConfig returns a server TLS configuration serving cert, with TLS 1.2 as the minimum version.
func TLSConfig(cert tls.Certificate) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		MinVersion:   tls.VersionTLS12,
	}
}

// LoadCAPool reads a PEM bundle of certificate authorities (--client-ca-file). A file that is
// missing, unreadable or holds no PEM certificate is an error naming it.
func LoadCAPool(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", path)
	}
	return pool, nil
}
