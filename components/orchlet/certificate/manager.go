package certificate

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
)

func newKey() (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// Rotation backs off between failed renewals as client-go's manager does: from 2s, doubling, up
// to 5 minutes.
const (
	initialBackoff = 2 * time.Second
	maxBackoff     = 5 * time.Minute
)

// ManagerOptions configure a Manager.
type ManagerOptions struct {
	Clock clock.Clock
	// Jitter returns a number in [0, 1) spreading renewals over 70-90% of a lifetime.
	Jitter func() float64
	Store  *Store
	// Request is what a renewal asks for; its Template is read on every renewal.
	Request func() Request
	// Client reaches certificates.orch.io; it is asked for on every renewal, so a client
	// authenticating with the certificate being rotated uses the current one.
	Client func() (rest.Interface, error)
	// Rotated, when set, is called after each new certificate is in use.
	Rotated func()
	Logger  logr.Logger
}

// Manager keeps a certificate current: it renews it at a jittered 70-90% of its lifetime, as
// client-go's certificate manager does, on its clock.
type Manager struct {
	o       ManagerOptions
	mu      sync.RWMutex
	current *tls.Certificate
}

// NewManager loads the stored certificate, if any.
func NewManager(o ManagerOptions) (*Manager, error) {
	m := &Manager{o: o}
	cert, err := o.Store.Current()
	if err != nil && !errors.Is(err, ErrNoCertificate) {
		return nil, err
	}
	m.current = cert
	return m, nil
}

// OnRotated sets what is called after each new certificate is in use; call it before Run.
func (m *Manager) OnRotated(f func()) { m.o.Rotated = f }

// Current is the certificate in use; nil until one is issued.
func (m *Manager) Current() *tls.Certificate {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.current
}

// Deadline is when the current certificate is renewed: a jittered 70-90% into its lifetime, at
// once when there is none.
func (m *Manager) Deadline() time.Time {
	cert := m.Current()
	if cert == nil || cert.Leaf == nil {
		return m.o.Clock.Now()
	}
	lifetime := cert.Leaf.NotAfter.Sub(cert.Leaf.NotBefore)
	return cert.Leaf.NotBefore.Add(time.Duration(float64(lifetime) * (0.7 + 0.2*m.o.Jitter())))
}

// Run renews the certificate at each deadline until ctx ends; a failed renewal is retried with
// back-off. Each certificate's deadline is drawn once, as client-go's manager does.
func (m *Manager) Run(ctx context.Context) {
	for {
		deadline := m.Deadline()
		if cert := m.Current(); cert != nil && cert.Leaf != nil {
			m.o.Logger.Info("Certificate rotation deadline determined", "prefix", m.o.Store.prefix, "expiration", cert.Leaf.NotAfter, "deadline", deadline)
		}
		if wait := deadline.Sub(m.o.Clock.Now()); wait > 0 {
			m.o.Logger.Info("Waiting for next certificate rotation", "prefix", m.o.Store.prefix, "sleep", wait)
			if !m.sleep(ctx, wait) {
				return
			}
		}
		for backoff := initialBackoff; ; backoff = min(2*backoff, maxBackoff) {
			err := m.Rotate(ctx)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return
			}
			m.o.Logger.Error(err, "Failed while requesting a signed certificate from the control plane", "prefix", m.o.Store.prefix)
			if !m.sleep(ctx, backoff) {
				return
			}
		}
	}
}

func (m *Manager) sleep(ctx context.Context, d time.Duration) bool {
	t := m.o.Clock.Timer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Rotate obtains a new certificate with a new key, stores it and puts it in use.
func (m *Manager) Rotate(ctx context.Context) error {
	client, err := m.o.Client()
	if err != nil {
		return err
	}
	certPEM, keyPEM, err := Obtain(ctx, client, m.o.Request())
	if err != nil {
		return err
	}
	cert, err := m.o.Store.Update(certPEM, keyPEM)
	if err != nil {
		return err
	}
	m.mu.Lock()
	m.current = cert
	m.mu.Unlock()
	m.o.Logger.Info("Certificate rotated", "prefix", m.o.Store.prefix, "expiration", cert.Leaf.NotAfter)
	if m.o.Rotated != nil {
		m.o.Rotated()
	}
	return nil
}
