package encryptionconfig

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"orch.io/orch/components/apis/apiserver/config"
)

func writeConfig(t *testing.T, path, resources string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("apiVersion: apiserver.config.orch.io/v1\nkind: EncryptionConfiguration\nresources:\n"+resources), 0o600); err != nil {
		t.Fatal(err)
	}
}

// loadedAtStart writes resources to a file, loads it and builds its transformers on clk, as the
// server does at start.
func loadedAtStart(t *testing.T, clk clock.Clock, resources string) (string, *config.Encryption, *Transformers, Options) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "enc.yaml")
	writeConfig(t, path, resources)
	enc, err := config.LoadEncryption(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Clock: clk}
	first, err := Build(enc.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	return path, enc, first, opts
}

// The file is read on the clock: a valid change is in force from the next read on, an invalid or
// refused one leaves the configuration in force, and a change back is picked up again.
func TestReloadOnTheClock(t *testing.T) {
	gcm := "- resources: [\"*.*\"]\n  providers: [{aesgcm: {keys: [{name: one, secret: " + key32 + "}]}}]\n"
	cbc := "- resources: [\"*.*\"]\n  providers: [{aescbc: {keys: [{name: two, secret: " + key32 + "}]}}, {aesgcm: {keys: [{name: one, secret: " + key32 + "}]}}]\n"
	clk := clock.NewMock()
	path, enc, first, opts := loadedAtStart(t, clk, gcm)
	refused := errors.New("refused by the server")
	d := NewReloader(path, enc.Config, first, opts, 10*time.Second, func(e *config.Encryption) error {
		if len(e.Config.Resources[0].Resources) > 1 {
			return refused
		}
		return nil
	})
	t.Cleanup(d.Stop)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)

	gr := schema.GroupResource{Group: "events.orch.io", Resource: "events"}
	writes := func() string {
		out := write(t, d.TransformerFor(gr), "/registry/events.orch.io/events/ns/a")
		return string(out[:len("orch:enc:aesgcm:v1:one:")])
	}
	waitFor := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; {
			clk.Add(10 * time.Second)
			if got := writes(); strings.HasPrefix(got, want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("writes still use %q, want %q", writes(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	before := write(t, d.TransformerFor(gr), "/registry/events.orch.io/events/ns/a")
	writeConfig(t, path, cbc)
	waitFor("orch:enc:aescbc:v1:two:")
	// What the old configuration wrote still reads through the new one, marked stale.
	if _, stale, err := d.TransformerFor(gr).TransformFromStorage(context.Background(), before, []byte("/registry/events.orch.io/events/ns/a")); err != nil || !stale {
		t.Fatalf("value of the old configuration: stale=%v err=%v", stale, err)
	}

	for _, bad := range []string{"resources: [\n", "- resources: [\"*.*\"]\n  providers: [{aesgcm: {keys: [{name: x, secret: c2hvcnQ=}]}}]\n", "- resources: [a, b]\n  providers: [{identity: {}}]\n"} {
		writeConfig(t, path, bad)
		changed, err := d.Check(context.Background())
		if changed || err == nil {
			t.Fatalf("%q: changed=%v err=%v", bad, changed, err)
		}
		if got := writes(); got != "orch:enc:aescbc:v1:two:" {
			t.Fatalf("after %q writes use %q", bad, got)
		}
	}
	writeConfig(t, path, gcm)
	waitFor("orch:enc:aesgcm:v1:one:")
}

// A file changed between its load at start and the reloader's start is put in force at the first
// read, as any later change is.
func TestReloadChangedBeforeStart(t *testing.T) {
	path, enc, first, opts := loadedAtStart(t, clock.NewMock(), "- resources: [\"*.*\"]\n  providers: [{aesgcm: {keys: [{name: one, secret: "+key32+"}]}}]\n")
	writeConfig(t, path, "- resources: [\"*.*\"]\n  providers: [{aescbc: {keys: [{name: two, secret: "+key32+"}]}}]\n")
	d := NewReloader(path, enc.Config, first, opts, 10*time.Second, func(*config.Encryption) error { return nil })
	t.Cleanup(d.Stop)
	if changed, err := d.Check(context.Background()); !changed || err != nil {
		t.Fatalf("first read: changed=%v err=%v, want the change put in force", changed, err)
	}
	gr := schema.GroupResource{Group: "events.orch.io", Resource: "events"}
	if out := write(t, d.TransformerFor(gr), "/registry/events.orch.io/events/ns/a"); !strings.HasPrefix(string(out), "orch:enc:aescbc:v1:two:") {
		t.Fatalf("writes use %q, want the changed file's aescbc key", out[:len("orch:enc:aescbc:v1:two:")])
	}
}
