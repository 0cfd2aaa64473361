package kmsplugin

import (
	"bufio"
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	kmsservice "k8s.io/kms/pkg/service"
)

// Plugin wraps data keys with the keys of a key file: one base64-encoded 32-byte AES key per line
// (blank lines and lines starting with # ignored). The first key wraps; every key unwraps, so a
// new key is rotated in by writing it on the first line and keeping the old ones below until
// every object has been rewritten. The file is read again on every Status (the API server polls
// it each minute), so a new first key becomes the key ID the server sees.
type Plugin struct {
	path string

	mu      sync.Mutex
	current string
	keys    map[string]cipher.AEAD
}

// New reads the key file at path.
func New(path string) (*Plugin, error) {
	p := &Plugin{path: path}
	if err := p.reload(); err != nil {
		return nil, err
	}
	return p, nil
}

// KeyID names a key without disclosing it: a hash of the key under a label of its own.
func KeyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("orch-kms-plugin key id\x00"), key...))
	return fmt.Sprintf("orch-kms-%x", sum[:12])
}

func (p *Plugin) reload() error {
	data, err := os.ReadFile(p.path)
	if err != nil {
		return fmt.Errorf("reading the key file: %w", err)
	}
	keys := map[string]cipher.AEAD{}
	current := ""
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; scanner.Scan(); line++ {
		text := strings.TrimSpace(scanner.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		key, err := base64.StdEncoding.DecodeString(text)
		if err != nil || len(key) != 32 {
			return fmt.Errorf("key file %s line %d: want a base64-encoded 32-byte key", p.path, line)
		}
		block, err := aes.NewCipher(key)
		if err != nil {
			return err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return err
		}
		id := KeyID(key)
		if current == "" {
			current = id
		}
		keys[id] = aead
	}
	if current == "" {
		return fmt.Errorf("key file %s holds no key", p.path)
	}
	p.mu.Lock()
	p.current, p.keys = current, keys
	p.mu.Unlock()
	return nil
}

// Status reports the key ID of the file's first key; a file that cannot be read is unhealthy.
func (p *Plugin) Status(context.Context) (*kmsservice.StatusResponse, error) {
	if err := p.reload(); err != nil {
		return &kmsservice.StatusResponse{Version: "v2", Healthz: err.Error()}, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return &kmsservice.StatusResponse{Version: "v2", Healthz: "ok", KeyID: p.current}, nil
}

// Encrypt wraps plaintext with the current key: a random nonce, then AES-GCM with the key ID as
// authenticated data.
func (p *Plugin) Encrypt(_ context.Context, _ string, plaintext []byte) (*kmsservice.EncryptResponse, error) {
	p.mu.Lock()
	id, aead := p.current, p.keys[p.current]
	p.mu.Unlock()
	out := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plaintext)+aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		return nil, err
	}
	return &kmsservice.EncryptResponse{Ciphertext: aead.Seal(out, out, plaintext, []byte(id)), KeyID: id}, nil
}

// Decrypt unwraps with the key the request's key ID names, reading the file again once when the
// ID is unknown (a key added since).
func (p *Plugin) Decrypt(_ context.Context, _ string, req *kmsservice.DecryptRequest) ([]byte, error) {
	aead := p.key(req.KeyID)
	if aead == nil {
		if err := p.reload(); err != nil {
			return nil, err
		}
		if aead = p.key(req.KeyID); aead == nil {
			return nil, fmt.Errorf("no key with ID %q in the key file", req.KeyID)
		}
	}
	n := aead.NonceSize()
	if len(req.Ciphertext) < n {
		return nil, errors.New("ciphertext shorter than a nonce")
	}
	return aead.Open(nil, req.Ciphertext[:n], req.Ciphertext[n:], []byte(req.KeyID))
}

func (p *Plugin) key(id string) cipher.AEAD {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.keys[id]
}
