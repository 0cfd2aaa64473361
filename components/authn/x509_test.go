package authn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

var serial int64

func newCert(t *testing.T, template *x509.Certificate, parent *testCA) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	template.SerialNumber = big.NewInt(serial)
	template.NotBefore = time.Unix(0, 0)
	template.NotAfter = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
	parentCert, parentKey := template, key
	if parent != nil {
		parentCert, parentKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parentCert, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func newCA(t *testing.T, name string, parent *testCA) *testCA {
	cert, key := newCert(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign,
	}, parent)
	return &testCA{cert: cert, key: key}
}

func newClientCert(t *testing.T, ca *testCA, cn string, orgs []string, usage x509.ExtKeyUsage) *x509.Certificate {
	cert, _ := newCert(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: cn, Organization: orgs},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}, ca)
	return cert
}

func TestX509(t *testing.T) {
	root := newCA(t, "root", nil)
	intermediate := newCA(t, "intermediate", root)
	other := newCA(t, "other", nil)
	pool := x509.NewCertPool()
	pool.AddCert(root.cert)

	clientAuth := x509.ExtKeyUsageClientAuth
	tests := []struct {
		name    string
		chain   []*x509.Certificate
		noTLS   bool
		want    *UserInfo
		wantErr bool
	}{
		{name: "no TLS: no opinion", noTLS: true},
		{name: "no certificate: no opinion"},
		{
			name:  "CN and organizations",
			chain: []*x509.Certificate{newClientCert(t, root, "alice", []string{"dev", "ops"}, clientAuth)},
			want:  &UserInfo{Name: "alice", Groups: []string{"dev", "ops", AllAuthenticated}},
		},
		{
			name:  "no organization",
			chain: []*x509.Certificate{newClientCert(t, root, "bob", nil, clientAuth)},
			want:  &UserInfo{Name: "bob", Groups: []string{AllAuthenticated}},
		},
		{
			name:  "signed by an intermediate the client sent",
			chain: []*x509.Certificate{newClientCert(t, intermediate, "carol", []string{"system:nodes"}, clientAuth), intermediate.cert},
			want:  &UserInfo{Name: "carol", Groups: []string{"system:nodes", AllAuthenticated}},
		},
		{
			name:    "intermediate not sent",
			chain:   []*x509.Certificate{newClientCert(t, intermediate, "carol", nil, clientAuth)},
			wantErr: true,
		},
		{
			name:    "unknown authority",
			chain:   []*x509.Certificate{newClientCert(t, other, "mallory", nil, clientAuth)},
			wantErr: true,
		},
		{
			name:    "server-only certificate",
			chain:   []*x509.Certificate{newClientCert(t, root, "server", nil, x509.ExtKeyUsageServerAuth)},
			wantErr: true,
		},
		{
			name:  "empty CommonName: no opinion",
			chain: []*x509.Certificate{newClientCert(t, root, "", []string{"dev"}, clientAuth)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/pods", nil)
			if !tt.noTLS {
				r.TLS = &tls.ConnectionState{PeerCertificates: tt.chain}
			}
			user, ok, err := X509(pool).AuthenticateRequest(r)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if ok != (tt.want != nil) || (ok && !reflect.DeepEqual(user, tt.want)) {
				t.Fatalf("AuthenticateRequest = %+v, %v; want %+v", user, ok, tt.want)
			}
		})
	}
}

func TestX509RejectionSkipsAnonymous(t *testing.T) {
	other := newCA(t, "other", nil)
	pool := x509.NewCertPool()
	pool.AddCert(newCA(t, "root", nil).cert)
	r := httptest.NewRequest("GET", "/pods", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{newClientCert(t, other, "mallory", nil, x509.ExtKeyUsageClientAuth)}}
	user, ok, err := Union(X509(pool), Anonymous()).AuthenticateRequest(r)
	if ok || err == nil {
		t.Fatalf("Union(X509, Anonymous) = %+v, %v, %v; want a rejection, not anonymous", user, ok, err)
	}
}
