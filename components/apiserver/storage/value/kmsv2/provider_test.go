package kmsv2_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	kmsservice "k8s.io/kms/pkg/service"

	"orch.io/orch/components/apiserver/storage/value/kmsv2"
	"orch.io/orch/components/kmsplugin"
)

// plugin is orch-kms-plugin served on a unix socket, counting calls, with a delay to play a slow
// plugin, and stop/start to play one that goes down.
type plugin struct {
	*kmsplugin.Plugin
	sock, keyFile      string
	encrypts, decrypts atomic.Int64
	delay              atomic.Int64 // nanoseconds
	cancel             context.CancelFunc
	done               chan error
}

func (p *plugin) wait(ctx context.Context) {
	select {
	case <-time.After(time.Duration(p.delay.Load())):
	case <-ctx.Done():
	}
}

func (p *plugin) Status(ctx context.Context) (*kmsservice.StatusResponse, error) {
	p.wait(ctx)
	return p.Plugin.Status(ctx)
}

func (p *plugin) Encrypt(ctx context.Context, uid string, data []byte) (*kmsservice.EncryptResponse, error) {
	p.encrypts.Add(1)
	p.wait(ctx)
	return p.Plugin.Encrypt(ctx, uid, data)
}

func (p *plugin) Decrypt(ctx context.Context, uid string, req *kmsservice.DecryptRequest) ([]byte, error) {
	p.decrypts.Add(1)
	p.wait(ctx)
	return p.Plugin.Decrypt(ctx, uid, req)
}

func writeKeys(t *testing.T, path string, n int) []string {
	t.Helper()
	var keys []string
	for range n {
		k := make([]byte, 32)
		_, _ = rand.Read(k)
		keys = append(keys, base64.StdEncoding.EncodeToString(k))
	}
	if err := os.WriteFile(path, []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return keys
}

func startPlugin(t *testing.T) *plugin {
	t.Helper()
	dir, err := os.MkdirTemp("", "kms")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := &plugin{sock: filepath.Join(dir, "kms.sock"), keyFile: filepath.Join(dir, "keys")}
	writeKeys(t, p.keyFile, 1)
	if p.Plugin, err = kmsplugin.New(p.keyFile); err != nil {
		t.Fatal(err)
	}
	p.start(t)
	t.Cleanup(p.stop)
	return p
}

func (p *plugin) start(t *testing.T) {
	t.Helper()
	l, err := kmsplugin.Listen(p.sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel, p.done = cancel, make(chan error, 1)
	go func() { p.done <- kmsplugin.Serve(ctx, l, p) }()
}

func (p *plugin) stop() {
	if p.cancel != nil {
		p.cancel()
		<-p.done
		p.cancel = nil
	}
}

func provider(t *testing.T, p *plugin, clk clock.Clock, timeout time.Duration) *kmsv2.Provider {
	t.Helper()
	svc, closeConn, err := kmsv2.Dial("unix://"+p.sock, timeout, clk)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); _ = closeConn() })
	return kmsv2.NewProvider(ctx, "test", svc, clk)
}

const ad = "/registry/events.orch.io/events/ns/a"

func keyIDOf(t *testing.T, stored []byte) string {
	t.Helper()
	o, err := kmsv2.Unmarshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	if o.DEKSourceType != kmsv2.HKDFSHA256XNonceAESGCMSeed || len(o.EncryptedDEKSource) == 0 {
		t.Fatalf("encrypted object %+v", o)
	}
	return o.KeyID
}

// One locally generated DEK seed, wrapped once by the plugin, encrypts every write; a restarted
// server (a new provider) asks the plugin to unwrap it once and then reads from its cache.
func TestDEKReuseAndCache(t *testing.T) {
	p := startPlugin(t)
	clk := clock.NewMock()
	prov := provider(t, p, clk, 3*time.Second)
	tr := prov.Transformer()
	ctx := context.Background()
	var stored [][]byte
	for i := range 20 {
		out, err := tr.TransformToStorage(ctx, []byte("value "+string(rune('a'+i))), []byte(ad))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out, []byte("value ")) {
			t.Fatal("plain text stored")
		}
		stored = append(stored, out)
	}
	if n := p.encrypts.Load(); n != 1 {
		t.Fatalf("the plugin wrapped %d DEKs for 20 writes, want 1", n)
	}
	st, _ := p.Plugin.Status(ctx)
	if id := keyIDOf(t, stored[0]); id != st.KeyID {
		t.Fatalf("stored key ID %q, plugin's %q", id, st.KeyID)
	}
	restarted := provider(t, p, clk, 3*time.Second).Transformer()
	for i, s := range stored {
		got, stale, err := restarted.TransformFromStorage(ctx, s, []byte(ad))
		if err != nil || stale || string(got) != "value "+string(rune('a'+i)) {
			t.Fatalf("read %d: %q stale=%v %v", i, got, stale, err)
		}
	}
	if n := p.decrypts.Load(); n != 1 {
		t.Fatalf("the plugin unwrapped %d times for 20 reads of one DEK, want 1", n)
	}
	if _, _, err := restarted.TransformFromStorage(ctx, stored[0], []byte("/registry/events.orch.io/events/ns/b")); err == nil {
		t.Fatal("a value read under another storage key")
	}
}

// A new key ID in the plugin's Status, seen at the next poll, brings a new DEK wrapped by it: new
// writes carry the new key ID, and older values still read, marked stale.
func TestKeyIDChangeFromStatus(t *testing.T) {
	p := startPlugin(t)
	clk := clock.NewMock()
	prov := provider(t, p, clk, 3*time.Second)
	tr := prov.Transformer()
	ctx := context.Background()
	before, err := tr.TransformToStorage(ctx, []byte("before"), []byte(ad))
	if err != nil {
		t.Fatal(err)
	}
	oldID := keyIDOf(t, before)
	old, _ := os.ReadFile(p.keyFile)
	writeKeys(t, p.keyFile, 1)
	newKey, _ := os.ReadFile(p.keyFile)
	if err := os.WriteFile(p.keyFile, append(newKey, old...), 0o600); err != nil {
		t.Fatal(err)
	}
	var after []byte
	for deadline := time.Now().Add(10 * time.Second); ; {
		clk.Add(kmsv2.PositivePollInterval)
		after, err = tr.TransformToStorage(ctx, []byte("after"), []byte(ad))
		if err != nil {
			t.Fatal(err)
		}
		if keyIDOf(t, after) != oldID {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("writes kept the old key ID after the plugin's status changed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, stale, err := tr.TransformFromStorage(ctx, before, []byte(ad)); err != nil || !stale {
		t.Fatalf("old value: stale=%v err=%v", stale, err)
	}
	if _, stale, err := tr.TransformFromStorage(ctx, after, []byte(ad)); err != nil || stale {
		t.Fatalf("new value: stale=%v err=%v", stale, err)
	}
	if err := prov.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// A plugin that goes down makes the provider unhealthy (after the cached good answer ages); writes
// go on with the current DEK for WriteDEKMaxTTL and then fail; reads of cached DEKs go on. Once the
// plugin is back, the next check makes it healthy and writes work again.
func TestPluginDown(t *testing.T) {
	p := startPlugin(t)
	clk := clock.NewMock()
	prov := provider(t, p, clk, 3*time.Second)
	tr := prov.Transformer()
	ctx := context.Background()
	stored, err := tr.TransformToStorage(ctx, []byte("v"), []byte(ad))
	if err != nil {
		t.Fatal(err)
	}
	p.stop()
	clk.Add(30 * time.Second) // past the cached good answer, before the next poll
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err = prov.Check(short)
	cancel()
	if err == nil || !strings.Contains(err.Error(), "failed to perform status section of the healthz check for KMS Provider test") {
		t.Fatalf("check with the plugin down: %v", err)
	}
	if _, err := tr.TransformToStorage(ctx, []byte("v2"), []byte(ad)); err != nil {
		t.Fatalf("write within the DEK's life: %v", err)
	}
	if got, _, err := tr.TransformFromStorage(ctx, stored, []byte(ad)); err != nil || string(got) != "v" {
		t.Fatalf("read of a cached DEK: %v", err)
	}
	clk.Add(kmsv2.WriteDEKMaxTTL)
	if _, err := tr.TransformToStorage(ctx, []byte("v3"), []byte(ad)); err == nil || !strings.Contains(err.Error(), "expired at") {
		t.Fatalf("write after the DEK expired: %v", err)
	}
	p.start(t)
	clk.Add(10 * time.Second) // past the cached bad answer
	if err := prov.Check(ctx); err != nil {
		t.Fatalf("check with the plugin back: %v", err)
	}
	if _, err := tr.TransformToStorage(ctx, []byte("v4"), []byte(ad)); err != nil {
		t.Fatalf("write with the plugin back: %v", err)
	}
}

// A plugin slower than the provider's timeout fails each call at the timeout, not later: the
// provider starts unhealthy with no DEK, and writes fail saying so.
func TestSlowPluginTimesOut(t *testing.T) {
	p := startPlugin(t)
	p.delay.Store(int64(5 * time.Second))
	start := time.Now()
	prov := provider(t, p, clock.New(), 200*time.Millisecond)
	took := time.Since(start)
	err := prov.Check(context.Background())
	if err == nil || !strings.Contains(err.Error(), "did not answer within the provider's timeout of 200ms") {
		t.Fatalf("check against a slow plugin: %v", err)
	}
	if took < 200*time.Millisecond || took > 2*time.Second {
		t.Fatalf("the first status call took %v, want about the 200ms timeout", took)
	}
	if _, err := prov.Transformer().TransformToStorage(context.Background(), []byte("v"), []byte(ad)); err == nil || !strings.Contains(err.Error(), "has no DEK") {
		t.Fatalf("write without a DEK: %v", err)
	}
}
