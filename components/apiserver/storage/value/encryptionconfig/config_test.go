package encryptionconfig

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch.io/orch/components/apis/apiserver/config"
	"orch.io/orch/components/apiserver/storage/value"
)

// Keys of the tests, base64: 32 bytes of 0..31 and 16 bytes of 0..15.
const (
	key32 = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	key16 = "AAECAwQFBgcICQoLDA0ODw=="
	other = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
)

func build(t *testing.T, yaml string) *Transformers {
	t.Helper()
	enc, err := config.ParseEncryption("test.yaml", []byte("apiVersion: apiserver.config.orch.io/v1\nkind: EncryptionConfiguration\n"+yaml))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Build(enc.Config, Options{Clock: clock.NewMock()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Stop)
	return tr
}

func write(t *testing.T, tr value.Transformer, key string) []byte {
	t.Helper()
	out, err := tr.TransformToStorage(context.Background(), []byte(`{"plain":true}`), []byte(key))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Resources resolve as SPEC.md's rules say: an exact entry, then *.group (or *. for the core
// group), then *.*, in the file's order; an identity entry first exempts its resource from a later
// wildcard; a resource no entry names is stored unencrypted.
func TestResourceMatching(t *testing.T) {
	tr := build(t, `resources:
- resources: [events.events.orch.io]
  providers: [{identity: {}}]
- resources: ["*."]
  providers: [{aesgcm: {keys: [{name: core, secret: `+key32+`}]}}]
- resources: ["*.apps"]
  providers: [{aescbc: {keys: [{name: apps, secret: `+key32+`}]}}]
- resources: [widgets.example.io]
  providers: [{aescbc: {keys: [{name: widgets, secret: `+key32+`}]}}]
- resources: ["*.*"]
  providers: [{secretbox: {keys: [{name: all, secret: `+key32+`}]}}]
`)
	narrow := build(t, `resources:
- resources: [pods]
  providers: [{aesgcm: {keys: [{name: k, secret: `+key16+`}]}}]
`)
	for _, tc := range []struct {
		tr         *Transformers
		resource   string
		wantPrefix string
	}{
		{tr, "events.events.orch.io", ""},
		{tr, "pods", "orch:enc:aesgcm:v1:core:"},
		{tr, "secrets", "orch:enc:aesgcm:v1:core:"},
		{tr, "deployments.apps", "orch:enc:aescbc:v1:apps:"},
		{tr, "widgets.example.io", "orch:enc:aescbc:v1:widgets:"},
		{tr, "gadgets.example.io", "orch:enc:secretbox:v1:all:"},
		{tr, "leases.events.orch.io", "orch:enc:secretbox:v1:all:"},
		{narrow, "pods", "orch:enc:aesgcm:v1:k:"},
		{narrow, "pods.other.io", ""},
		{narrow, "secrets", ""},
	} {
		out := write(t, tc.tr.TransformerFor(schema.ParseGroupResource(tc.resource)), "/registry/x")
		if tc.wantPrefix == "" {
			if string(out) != `{"plain":true}` {
				t.Errorf("%s: stored %q, want it unencrypted", tc.resource, out)
			}
			continue
		}
		if !bytes.HasPrefix(out, []byte(tc.wantPrefix)) {
			t.Errorf("%s: stored %q, want prefix %s", tc.resource, out, tc.wantPrefix)
		}
	}
}

// Each resource reads only with the providers of its own entry: data another entry's provider
// wrote is not readable by it, even with the same key name.
func TestProvidersAreScopedToTheirEntry(t *testing.T) {
	tr := build(t, `resources:
- resources: [secrets]
  providers: [{aescbc: {keys: [{name: k, secret: `+key32+`}]}}]
- resources: [configmaps]
  providers: [{aescbc: {keys: [{name: k, secret: `+other+`}]}}]
`)
	stored := write(t, tr.TransformerFor(schema.GroupResource{Resource: "secrets"}), "/registry/secrets/a")
	if _, _, err := tr.TransformerFor(schema.GroupResource{Resource: "configmaps"}).TransformFromStorage(context.Background(), stored, []byte("/registry/secrets/a")); err == nil {
		t.Fatal("configmaps' key read a secret's value")
	}
}

// Rotation as Kubernetes documents it: a value written with key1, then key2 added second (reads
// both, still writes key1), then key2 moved first (writes key2, key1 values stale), then key1
// dropped (key1 values unreadable, key2 values fine).
func TestKeyRotation(t *testing.T) {
	gr := schema.GroupResource{Group: "events.orch.io", Resource: "events"}
	ad := "/registry/events.orch.io/events/default/a"
	steps := []struct {
		keys      string
		wantWrite string
	}{
		{`[{name: key1, secret: ` + key32 + `}]`, "key1"},
		{`[{name: key1, secret: ` + key32 + `}, {name: key2, secret: ` + other + `}]`, "key1"},
		{`[{name: key2, secret: ` + other + `}, {name: key1, secret: ` + key32 + `}]`, "key2"},
		{`[{name: key2, secret: ` + other + `}]`, "key2"},
	}
	var byKey1, byKey2 []byte
	for i, s := range steps {
		tr := build(t, "resources:\n- resources: [events.events.orch.io]\n  providers: [{aesgcm: {keys: "+s.keys+"}}]\n").TransformerFor(gr)
		out := write(t, tr, ad)
		if want := "orch:enc:aesgcm:v1:" + s.wantWrite + ":"; !bytes.HasPrefix(out, []byte(want)) {
			t.Fatalf("step %d wrote %q, want prefix %s", i, out[:30], want)
		}
		if s.wantWrite == "key1" {
			byKey1 = out
		} else if byKey2 == nil {
			byKey2 = out
		}
		_, stale, err := tr.TransformFromStorage(context.Background(), byKey1, []byte(ad))
		switch i {
		case 0, 1:
			if err != nil || stale {
				t.Fatalf("step %d: key1 value: stale=%v err=%v", i, stale, err)
			}
		case 2:
			if err != nil || !stale {
				t.Fatalf("step %d: key1 value should read and be stale: stale=%v err=%v", i, stale, err)
			}
		case 3:
			if err == nil || !strings.Contains(err.Error(), "no matching key was found for the provided AES transformer") {
				t.Fatalf("step %d: key1 value after key1 was dropped: %v", i, err)
			}
			if _, stale, err := tr.TransformFromStorage(context.Background(), byKey2, []byte(ad)); err != nil || stale {
				t.Fatalf("key2 value after rotation: stale=%v err=%v", stale, err)
			}
		}
	}
}

// KMS v1 is refused with Kubernetes' deprecation text.
func TestKMSv1Refused(t *testing.T) {
	enc, err := config.ParseEncryption("t", []byte(`apiVersion: apiserver.config.orch.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers: [{kms: {name: old, endpoint: "unix:///tmp/x.sock"}}]
`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Build(enc.Config, Options{Clock: clock.NewMock()})
	if err == nil || !strings.Contains(err.Error(), "resources[0].providers[0]") || !strings.Contains(err.Error(), "KMSv1 is deprecated and will only receive security updates going forward. Use KMSv2 instead.") {
		t.Fatalf("err %v", err)
	}
}
