package app_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"orch.io/orch/components/apiserver/app"
	"orch.io/orch/components/apiserver/storage/etcd3"
	"orch.io/orch/components/kmsplugin"
)

// Keys of these tests, base64.
const (
	keyA = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	keyB = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
)

// encryptedServer is an orch-apiserver over an etcd the test reads directly.
type encryptedServer struct {
	*testServer
	etcd   *etcd3.Embedded
	client dynamic.Interface
}

func startEtcd(t *testing.T) *etcd3.Embedded {
	t.Helper()
	e, err := etcd3.StartEmbedded(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// writeEncryptionConfig writes an EncryptionConfiguration with resources given as YAML.
func writeEncryptionConfig(t *testing.T, path, resources string) string {
	t.Helper()
	data := "apiVersion: apiserver.config.orch.io/v1\nkind: EncryptionConfiguration\nresources:\n" + resources
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func startEncrypted(t *testing.T, e *etcd3.Embedded, configFile string, tune ...func(*app.Options)) *encryptedServer {
	t.Helper()
	s := startServer(t, append([]func(*app.Options){func(o *app.Options) {
		o.EtcdServers = []string{e.Endpoint}
		o.EncryptionProviderConfig = configFile
	}}, tune...)...)
	client, err := dynamic.NewForConfig(s.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	return &encryptedServer{testServer: s, etcd: e, client: client}
}

// raw is the value etcd holds for an event, read past the server.
func (s *encryptedServer) raw(t *testing.T, ns, name string) []byte {
	t.Helper()
	resp, err := s.etcd.Client.Get(t.Context(), "/registry/events.orch.io/events/"+ns+"/"+name)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get %s/%s: %v (%d kvs)", ns, name, err, len(resp.Kvs))
	}
	return resp.Kvs[0].Value
}

func (s *encryptedServer) events(ns string) dynamic.ResourceInterface {
	return s.client.Resource(eventsGVR).Namespace(ns)
}

func (s *encryptedServer) create(t *testing.T, ns, name, note string) *unstructured.Unstructured {
	t.Helper()
	ev := newEvent(ns, name, nil)
	ev.Object["note"] = note
	out, err := s.events(ns).Create(t.Context(), ev, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s/%s: %v", ns, name, err)
	}
	return out
}

// expectStored checks etcd holds ciphertext after prefix (or, with no prefix, the plain JSON),
// never the note in clear.
func expectStored(t *testing.T, raw []byte, prefix, note string) {
	t.Helper()
	if prefix == "" {
		if !bytes.HasPrefix(raw, []byte(`{"kind":"Event"`)) || !bytes.Contains(raw, []byte(note)) {
			t.Fatalf("etcd holds %q, want the plain JSON", raw)
		}
		return
	}
	if !bytes.HasPrefix(raw, []byte(prefix)) {
		t.Fatalf("etcd holds %q..., want prefix %s", raw[:min(len(raw), 40)], prefix)
	}
	if bytes.Contains(raw, []byte(note)) {
		t.Fatalf("etcd holds the note %q in clear", note)
	}
}

// Each provider, first in the entry for events, encrypts what the API stores: etcd holds its
// prefix and ciphertext, and the API reads, lists and watches the plain object.
func TestEncryptionAtRestPerProvider(t *testing.T) {
	e := startEtcd(t)
	dir := t.TempDir()
	for i, tc := range []struct {
		provider, prefix string
	}{
		{"{aescbc: {keys: [{name: key1, secret: " + keyA + "}]}}", "orch:enc:aescbc:v1:key1:"},
		{"{aesgcm: {keys: [{name: key1, secret: " + keyB + "}]}}", "orch:enc:aesgcm:v1:key1:"},
		{"{secretbox: {keys: [{name: box, secret: " + keyA + "}]}}", "orch:enc:secretbox:v1:box:"},
		{"{identity: {}}", ""},
	} {
		name := []string{"aescbc", "aesgcm", "secretbox", "identity"}[i]
		t.Run(name, func(t *testing.T) {
			cfg := writeEncryptionConfig(t, filepath.Join(dir, name+".yaml"), "- resources: [events.events.orch.io]\n  providers: ["+tc.provider+"]\n")
			s := startEncrypted(t, e, cfg)
			ns := "ns-" + name
			note := "the " + name + " note"
			created := s.create(t, ns, "a", note)
			expectStored(t, s.raw(t, ns, "a"), tc.prefix, note)
			got, err := s.events(ns).Get(t.Context(), "a", metav1.GetOptions{})
			if err != nil || got.Object["note"] != note || got.GetResourceVersion() != created.GetResourceVersion() {
				t.Fatalf("get: %v %v", err, got)
			}
			list, err := s.events(ns).List(t.Context(), metav1.ListOptions{})
			if err != nil || len(list.Items) != 1 || list.Items[0].Object["note"] != note {
				t.Fatalf("list: %v %v", err, list)
			}
			w, err := s.events(ns).Watch(t.Context(), metav1.ListOptions{ResourceVersion: created.GetResourceVersion()})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			s.create(t, ns, "b", note+" 2")
			ev := <-w.ResultChan()
			if u, ok := ev.Object.(*unstructured.Unstructured); !ok || u.GetName() != "b" || u.Object["note"] != note+" 2" {
				t.Fatalf("watch event %v %v", ev.Type, ev.Object)
			}
			expectStored(t, s.raw(t, ns, "b"), tc.prefix, note+" 2")
		})
	}
}

// replaceAll rewrites every event unchanged, as `kubectl get events.events.orch.io -A -o json |
// kubectl replace -f -` does: the documented way to move objects to the key now first.
func replaceAll(t *testing.T, s *encryptedServer) {
	t.Helper()
	list, err := s.client.Resource(eventsGVR).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range list.Items {
		out, err := s.events(item.GetNamespace()).Update(t.Context(), &item, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("replace %s: %v", item.GetName(), err)
		}
		if out.GetResourceVersion() == item.GetResourceVersion() {
			t.Fatalf("replace of %s wrote nothing: a stale object must be rewritten", item.GetName())
		}
	}
}

// Key rotation the Kubernetes way, each step a restart: add the new key second, move it first,
// rewrite every object, drop the old key. Every object reads throughout; etcd ends with the new key
// only.
func TestKeyRotationEndToEnd(t *testing.T) {
	e := startEtcd(t)
	cfg := filepath.Join(t.TempDir(), "encryption.yaml")
	step := func(keys string) *encryptedServer {
		writeEncryptionConfig(t, cfg, "- resources: [events.events.orch.io]\n  providers:\n  - aescbc: {keys: "+keys+"}\n  - identity: {}\n")
		return startEncrypted(t, e, cfg)
	}
	old := "[{name: old, secret: " + keyA + "}]"
	both := "[{name: old, secret: " + keyA + "}, {name: new, secret: " + keyB + "}]"
	swapped := "[{name: new, secret: " + keyB + "}, {name: old, secret: " + keyA + "}]"
	fresh := "[{name: new, secret: " + keyB + "}]"

	s := step(old)
	for _, n := range []string{"a", "b", "c"} {
		s.create(t, "rot", n, "note "+n)
	}
	s.stop()

	s = step(both)
	s.create(t, "rot", "d", "note d")
	for _, n := range []string{"a", "b", "c", "d"} {
		expectStored(t, s.raw(t, "rot", n), "orch:enc:aescbc:v1:old:", "note "+n)
	}
	s.stop()

	s = step(swapped)
	expectStored(t, s.raw(t, "rot", "a"), "orch:enc:aescbc:v1:old:", "note a")
	replaceAll(t, s)
	for _, n := range []string{"a", "b", "c", "d"} {
		expectStored(t, s.raw(t, "rot", n), "orch:enc:aescbc:v1:new:", "note "+n)
	}
	s.stop()

	s = step(fresh)
	list, err := s.events("rot").List(t.Context(), metav1.ListOptions{})
	if err != nil || len(list.Items) != 4 {
		t.Fatalf("after dropping the old key: %v, %d items", err, len(list.Items))
	}
	for _, item := range list.Items {
		if item.Object["note"] != "note "+item.GetName() {
			t.Fatalf("%s reads %v", item.GetName(), item.Object["note"])
		}
	}
}

// A value whose prefix no configured provider reads is a 500 Status naming the resource and the
// prefix, for that object and for lists holding it; the server starts and stays healthy.
func TestUnknownPrefixIsAnInternalError(t *testing.T) {
	e := startEtcd(t)
	dir := t.TempDir()
	s := startEncrypted(t, e, writeEncryptionConfig(t, filepath.Join(dir, "a.yaml"), "- resources: [\"*.*\"]\n  providers: [{secretbox: {keys: [{name: gone, secret: "+keyA+"}]}}]\n"))
	s.create(t, "lost", "a", "unreadable later")
	s.stop()

	s = startEncrypted(t, e, writeEncryptionConfig(t, filepath.Join(dir, "b.yaml"), "- resources: [events.events.orch.io]\n  providers: [{aesgcm: {keys: [{name: k, secret: "+keyB+"}]}}]\n"))
	_, err := s.events("lost").Get(t.Context(), "a", metav1.GetOptions{})
	wantStatus := func(what string, err error) {
		t.Helper()
		if !apierrors.IsInternalError(err) {
			t.Fatalf("%s: %v, want a 500", what, err)
		}
		for _, want := range []string{`resource "events.events.orch.io"`, `prefix "orch:enc:secretbox:v1:gone:"`} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: %q lacks %q", what, err.Error(), want)
			}
		}
	}
	wantStatus("get", err)
	_, err = s.events("lost").List(t.Context(), metav1.ListOptions{})
	wantStatus("list", err)
	// Other objects are written and read as usual.
	s.create(t, "fine", "b", "readable")
	if got, err := s.events("fine").Get(t.Context(), "b", metav1.GetOptions{}); err != nil || got.Object["note"] != "readable" {
		t.Fatalf("another object: %v", err)
	}
	if code, body := get(t, s.testServer, "/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz = %d %s", code, body)
	}
}

// get answers path's status code and body over the server's own TLS.
func get(t *testing.T, s *testServer, path string) (int, string) {
	t.Helper()
	client, err := rest.HTTPClientFor(s.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	resp, body := send(t, client, http.MethodGet, "https://"+s.addr+path, "", nil)
	return resp.StatusCode, string(body)
}

// KMS v2 end to end with orch's reference plugin: a server whose plugin is down starts, reports
// kms-provider-0 failing on /healthz and /readyz (not /livez) and refuses writes; once the plugin
// is up the check passes, and etcd holds values with the kms prefix that read back in clear.
func TestKMSv2EndToEnd(t *testing.T) {
	dir, err := os.MkdirTemp("", "kms")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	keyFile := filepath.Join(dir, "keys")
	if err := os.WriteFile(keyFile, []byte(keyA+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "kms.sock")
	e := startEtcd(t)
	cfg := writeEncryptionConfig(t, filepath.Join(dir, "enc.yaml"), "- resources: [\"*.*\"]\n  providers:\n  - kms: {apiVersion: v2, name: local, endpoint: \"unix://"+sock+"\", timeout: 1s}\n")
	s := startEncrypted(t, e, cfg)

	for _, path := range []string{"/healthz?verbose", "/readyz?verbose"} {
		if code, body := get(t, s.testServer, path); code != http.StatusInternalServerError || !strings.Contains(body, "[-]kms-provider-0 failed") {
			t.Fatalf("%s with the plugin down = %d:\n%s", path, code, body)
		}
	}
	if code, body := get(t, s.testServer, "/livez"); code != http.StatusOK {
		t.Fatalf("/livez with the plugin down = %d %s", code, body)
	}
	if _, err := s.events("kms").Create(t.Context(), newEvent("kms", "early", nil), metav1.CreateOptions{}); !apierrors.IsInternalError(err) {
		t.Fatalf("write with the plugin down: %v, want a 500", err)
	}

	p, err := kmsplugin.New(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	l, err := kmsplugin.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- kmsplugin.Serve(ctx, l, p) }()
	t.Cleanup(func() { cancel(); <-done })

	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		code, body := get(t, s.testServer, "/readyz?verbose")
		if code == http.StatusOK && strings.Contains(body, "[+]kms-provider-0 ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz with the plugin up = %d:\n%s", code, body)
		}
	}
	s.create(t, "kms", "a", "kms note")
	raw := s.raw(t, "kms", "a")
	expectStored(t, raw, "orch:enc:kms:v2:local:", "kms note")
	got, err := s.events("kms").Get(t.Context(), "a", metav1.GetOptions{})
	if err != nil || got.Object["note"] != "kms note" {
		t.Fatalf("get: %v", err)
	}
}

// With --encryption-provider-config-automatic-reload a new key put first in the file takes effect
// without a restart while clients create and read events, and no request fails; a broken file
// leaves the configuration in force.
func TestReloadUnderLoad(t *testing.T) {
	e := startEtcd(t)
	cfg := filepath.Join(t.TempDir(), "enc.yaml")
	oldKey := "- aescbc: {keys: [{name: old, secret: " + keyA + "}]}\n"
	newKey := "- aesgcm: {keys: [{name: new, secret: " + keyB + "}]}\n"
	writeEncryptionConfig(t, cfg, "- resources: [events.events.orch.io]\n  providers:\n  "+oldKey)
	s := startEncrypted(t, e, cfg, func(o *app.Options) {
		o.EncryptionProviderConfigAutomaticReload = true
		o.EncryptionReloadInterval = 100 * time.Millisecond
	})
	var failures atomic.Int64
	var created atomic.Int64
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil && i < 2000; i++ {
				name := fmt.Sprintf("w%d-%d", w, i)
				if _, err := s.events("load").Create(ctx, newEvent("load", name, nil), metav1.CreateOptions{}); err != nil {
					if ctx.Err() == nil {
						failures.Add(1)
						t.Errorf("create %s: %v", name, err)
					}
					continue
				}
				created.Add(1)
				if _, err := s.events("load").Get(ctx, name, metav1.GetOptions{}); err != nil && ctx.Err() == nil {
					failures.Add(1)
					t.Errorf("get %s: %v", name, err)
				}
			}
		}()
	}
	waitPrefix := func(prefix string) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			name := fmt.Sprintf("probe-%d", time.Now().UnixNano())
			s.create(t, "load", name, "probe")
			if bytes.HasPrefix(s.raw(t, "load", name), []byte(prefix)) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("new writes never carried %s", prefix)
			}
		}
	}
	time.Sleep(300 * time.Millisecond)
	writeEncryptionConfig(t, cfg, "- resources: [events.events.orch.io]\n  providers:\n  "+newKey+"  "+oldKey)
	waitPrefix("orch:enc:aesgcm:v1:new:")
	if err := os.WriteFile(cfg, []byte("kind: EncryptionConfiguration\nresources: [\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	waitPrefix("orch:enc:aesgcm:v1:new:")
	time.Sleep(200 * time.Millisecond)
	cancel()
	wg.Wait()
	if failures.Load() != 0 || created.Load() == 0 {
		t.Fatalf("%d requests failed, %d events created", failures.Load(), created.Load())
	}
	// Every event reads, whichever key wrote it.
	list, err := s.events("load").List(t.Context(), metav1.ListOptions{})
	if err != nil || int64(len(list.Items)) < created.Load() {
		t.Fatalf("list after reload: %v, %d items for %d created", err, len(list.Items), created.Load())
	}
}
