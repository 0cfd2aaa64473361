package transform

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"orch.io/orch/components/apis/apiserver/config"
	"orch.io/orch/components/apiserver/storage"
	"orch.io/orch/components/apiserver/storage/memory"
	"orch.io/orch/components/apiserver/storage/storagetest"
	"orch.io/orch/components/apiserver/storage/value/encryptionconfig"
)

const key32 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

func transformers(t *testing.T, resources string) *encryptionconfig.Transformers {
	t.Helper()
	enc, err := config.ParseEncryption("t.yaml", []byte("apiVersion: apiserver.config.orch.io/v1\nkind: EncryptionConfiguration\nresources:\n"+resources))
	if err != nil {
		t.Fatal(err)
	}
	built, err := encryptionconfig.Build(enc.Config, encryptionconfig.Options{Clock: clock.NewMock()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(built.Stop)
	return built
}

// The wrapper keeps the storage contract: the whole conformance suite runs through it, every
// value encrypted underneath.
func TestConformance(t *testing.T) {
	tr := transformers(t, "- resources: [\"*.*\"]\n  providers: [{aesgcm: {keys: [{name: k, secret: "+key32+"}]}}]\n")
	storagetest.Run(t, storagetest.Harness{
		New: func(t *testing.T) storagetest.Fixture {
			clk := clock.NewMock()
			s := New(memory.New(clk), tr)
			t.Cleanup(func() { s.Close() })
			return storagetest.Fixture{Store: s, Prefix: "/registry/tests.orch.io", Advance: clk.Add}
		},
		TTL:         time.Minute,
		ExpiryGrace: 0,
	})
}

func TestResourceForKey(t *testing.T) {
	for key, want := range map[string]string{
		"/registry/events.orch.io/events/default/a":  "events.events.orch.io",
		"/registry/pods/default/a":                   "pods",
		"/registry/coordination.orch.io/leases/ns/x": "leases.coordination.orch.io",
		"/registry/events.orch.io/events":            "events.events.orch.io",
		"/registry/events.orch.io/events/":           "events.events.orch.io",
	} {
		gr, err := ResourceForKey(key)
		if err != nil || gr.String() != want {
			t.Errorf("ResourceForKey(%q) = %q, %v; want %q", key, gr.String(), err, want)
		}
	}
	for _, key := range []string{"/registry/events.orch.io", "/registry/events.orch.io/", "/other/a/b", "registry/a/b", ""} {
		if _, err := ResourceForKey(key); err == nil {
			t.Errorf("ResourceForKey(%q) accepted a key outside the layout", key)
		}
	}
}

// What lands in the store underneath is ciphertext carrying the first provider's prefix, for each
// provider and for core and named groups; the caller reads its plain value back.
func TestStoredFormPerProvider(t *testing.T) {
	ctx := context.Background()
	plain := []byte(`{"kind":"Event","note":"a secret note"}`)
	for _, tc := range []struct {
		provider, key, wantPrefix string
	}{
		{"{aescbc: {keys: [{name: key1, secret: " + key32 + "}]}}", "/registry/events.orch.io/events/ns/a", "orch:enc:aescbc:v1:key1:"},
		{"{aesgcm: {keys: [{name: key2, secret: " + key32 + "}]}}", "/registry/events.orch.io/events/ns/a", "orch:enc:aesgcm:v1:key2:"},
		{"{secretbox: {keys: [{name: key3, secret: " + key32 + "}]}}", "/registry/secrets/ns/a", "orch:enc:secretbox:v1:key3:"},
		{"{identity: {}}", "/registry/secrets/ns/a", ""},
	} {
		t.Run(tc.wantPrefix, func(t *testing.T) {
			inner := memory.New(clock.NewMock())
			s := New(inner, transformers(t, "- resources: [events.events.orch.io, secrets]\n  providers: ["+tc.provider+"]\n"))
			if _, err := s.Create(ctx, tc.key, plain, 0); err != nil {
				t.Fatal(err)
			}
			raw, err := inner.Get(ctx, tc.key)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantPrefix == "" {
				if !bytes.Equal(raw.Value, plain) {
					t.Fatalf("identity stored %q", raw.Value)
				}
			} else if !bytes.HasPrefix(raw.Value, []byte(tc.wantPrefix)) || bytes.Contains(raw.Value, []byte("secret note")) {
				t.Fatalf("stored %q, want ciphertext after %s", raw.Value, tc.wantPrefix)
			}
			got, err := s.Get(ctx, tc.key)
			if err != nil || !bytes.Equal(got.Value, plain) || got.Stale {
				t.Fatalf("Get = %q stale=%v, %v", got.Value, got.Stale, err)
			}
		})
	}
}

// A value no provider of its resource reads is an error naming the key, the resource and the
// value's prefix, on every read path; a value with an older key is read and marked stale.
func TestUnreadableAndStaleValues(t *testing.T) {
	ctx := context.Background()
	inner := memory.New(clock.NewMock())
	writer := New(inner, transformers(t, "- resources: [events.events.orch.io]\n  providers: [{aescbc: {keys: [{name: old, secret: "+key32+"}]}}]\n"))
	key := "/registry/events.orch.io/events/ns/a"
	if _, err := writer.Create(ctx, key, []byte(`{"a":1}`), 0); err != nil {
		t.Fatal(err)
	}
	reader := New(inner, transformers(t, "- resources: [events.events.orch.io]\n  providers: [{aesgcm: {keys: [{name: new, secret: "+key32+"}]}}]\n"))
	check := func(what string, err error) {
		t.Helper()
		var te *Error
		if !errors.As(err, &te) {
			t.Fatalf("%s: err %v, want a transform.Error", what, err)
		}
		msg := err.Error()
		for _, want := range []string{key, `resource "events.events.orch.io"`, `prefix "orch:enc:aescbc:v1:old:"`, "no matching prefix found"} {
			if !strings.Contains(msg, want) {
				t.Fatalf("%s: %q lacks %q", what, msg, want)
			}
		}
	}
	_, err := reader.Get(ctx, key)
	check("Get", err)
	_, err = reader.List(ctx, "/registry/events.orch.io/events/", storage.ListOptions{})
	check("List", err)

	w, err := reader.Watch(ctx, "/registry/events.orch.io/events/", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := writer.Create(ctx, key+"2", []byte(`{"a":2}`), 0); err != nil {
		t.Fatal(err)
	}
	ev := <-w
	check("Watch", ev.Err)
	if _, ok := <-w; ok {
		t.Fatal("the watch went on after an unreadable change")
	}

	rotating := New(inner, transformers(t, "- resources: [events.events.orch.io]\n  providers: [{aesgcm: {keys: [{name: new, secret: "+key32+"}]}}, {aescbc: {keys: [{name: old, secret: "+key32+"}]}}]\n"))
	kv, err := rotating.Get(ctx, key)
	if err != nil || !kv.Stale || string(kv.Value) != `{"a":1}` {
		t.Fatalf("old-key value through the rotating config: %q stale=%v err=%v", kv.Value, kv.Stale, err)
	}
	if _, err := rotating.Update(ctx, key, kv.ModRevision, kv.Value, 0); err != nil {
		t.Fatal(err)
	}
	if kv, err = rotating.Get(ctx, key); err != nil || kv.Stale {
		t.Fatalf("after the rewrite: stale=%v err=%v", kv.Stale, err)
	}
	if raw, _ := inner.Get(ctx, key); !bytes.HasPrefix(raw.Value, []byte("orch:enc:aesgcm:v1:new:")) {
		t.Fatalf("rewrite stored %q", raw.Value)
	}

	// A key outside the layout is refused, not stored unencrypted.
	if _, err := reader.Create(ctx, "/elsewhere/x", []byte("v"), 0); err == nil || !strings.Contains(err.Error(), "not of the form /registry/<resource>/... or /registry/<group>/<resource>/") {
		t.Fatalf("Create outside the layout: %v", err)
	}
}

// Watch events carry plain values, the previous one of an update included.
func TestWatchDecryptsValues(t *testing.T) {
	ctx := context.Background()
	s := New(memory.New(clock.NewMock()), transformers(t, "- resources: [\"*.*\"]\n  providers: [{secretbox: {keys: [{name: k, secret: "+key32+"}]}}]\n"))
	w, err := s.Watch(ctx, "/registry/", 0)
	if err != nil {
		t.Fatal(err)
	}
	key := "/registry/g.io/things/x"
	rev, _ := s.Create(ctx, key, []byte("one"), 0)
	if _, err := s.Update(ctx, key, rev, []byte("two"), 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Delete(ctx, key, 0); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		typ        storage.EventType
		value, old string
	}{{storage.Put, "one", ""}, {storage.Put, "two", "one"}, {storage.Delete, "two", ""}} {
		ev := <-w
		if ev.Err != nil || ev.Type != want.typ || string(ev.KV.Value) != want.value || string(ev.PrevValue) != want.old {
			t.Fatalf("event %+v, want %+v", ev, want)
		}
	}
}
