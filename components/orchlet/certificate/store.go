package certificate

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/benbjohnson/clock"
)

// Store keeps a certificate and its key under a directory as client-go's file store does:
// <prefix>-<timestamp>.pem holds both, and <prefix>-current.pem links to the newest.
type Store struct {
	dir, prefix string
	clock       clock.Clock
	// certFile and keyFile, when set, are read while no pair has been stored (the files an
	// --orchconfig names).
	certFile, keyFile string
}

// NewStore returns a store of prefix (orchlet-client, orchlet-server) under dir.
func NewStore(dir, prefix, certFile, keyFile string, clk clock.Clock) *Store {
	return &Store{dir: dir, prefix: prefix, clock: clk, certFile: certFile, keyFile: keyFile}
}

// CurrentPath is the link to the newest pair: <dir>/<prefix>-current.pem.
func (s *Store) CurrentPath() string {
	return filepath.Join(s.dir, s.prefix+"-current.pem")
}

// ErrNoCertificate is returned by Current when nothing is stored yet.
var ErrNoCertificate = errors.New("no certificate stored")

// Current loads the newest pair, or the fallback files; ErrNoCertificate when there is none.
func (s *Store) Current() (*tls.Certificate, error) {
	path := s.CurrentPath()
	if _, err := os.Stat(path); err == nil {
		return load(path, path)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if s.certFile != "" && s.keyFile != "" {
		if _, err := os.Stat(s.certFile); err == nil {
			return load(s.certFile, s.keyFile)
		}
	}
	return nil, ErrNoCertificate
}

func load(certFile, keyFile string) (*tls.Certificate, error) {
	var pair tls.Certificate
	var err error
	if certFile == keyFile {
		// One read: a pair replaced between reading its certificate and its key would mix two.
		var data []byte
		if data, err = os.ReadFile(certFile); err == nil {
			pair, err = tls.X509KeyPair(data, data)
		}
	} else {
		pair, err = tls.LoadX509KeyPair(certFile, keyFile)
	}
	if err != nil {
		return nil, fmt.Errorf("loading certificate %s and key %s: %w", certFile, keyFile, err)
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("parsing certificate %s: %w", certFile, err)
		}
	}
	return &pair, nil
}

// Update stores a new pair (PEM) as <prefix>-<timestamp>.pem and points the current link at it.
func (s *Store) Update(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating --cert-dir %s: %w", s.dir, err)
	}
	name := s.prefix + "-" + s.clock.Now().UTC().Format("2006-01-02-15-04-05") + ".pem"
	path := filepath.Join(s.dir, name)
	// A pair renewed within the same second has the name the link may already point at: it is
	// written beside it and renamed over it, so a reader finds the old pair or the new one whole.
	written := filepath.Join(s.dir, s.prefix+"-writing.pem")
	if err := os.WriteFile(written, append(append([]byte{}, certPEM...), keyPEM...), 0o600); err != nil {
		return nil, fmt.Errorf("writing %s: %w", written, err)
	}
	pair, err := load(written, written)
	if err != nil {
		_ = os.Remove(written)
		return nil, err
	}
	if err := os.Rename(written, path); err != nil {
		return nil, fmt.Errorf("replacing %s: %w", path, err)
	}
	// A new link renamed over the old one: readers see the old pair or the new one, never none.
	tmp := filepath.Join(s.dir, s.prefix+"-updated.pem")
	_ = os.Remove(tmp)
	if err := os.Symlink(name, tmp); err != nil {
		return nil, fmt.Errorf("linking %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, s.CurrentPath()); err != nil {
		return nil, fmt.Errorf("replacing %s: %w", s.CurrentPath(), err)
	}
	return pair, nil
}
