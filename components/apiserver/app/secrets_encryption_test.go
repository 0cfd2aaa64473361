package app_test

import (
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Secrets are encrypted at rest when the configuration names them: etcd holds the provider's
// prefix and ciphertext, the API the plain secret.
func TestSecretsEncryptedAtRest(t *testing.T) {
	e := startEtcd(t)
	cfg := writeEncryptionConfig(t, filepath.Join(t.TempDir(), "enc.yaml"), "- resources: [secrets]\n  providers: [{aescbc: {keys: [{name: key1, secret: "+keyA+"}]}}, {identity: {}}]\n")
	s := startEncrypted(t, e, cfg)
	secrets := s.client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace("default")
	secret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db"}, "stringData": map[string]any{"password": "very-secret-value"}}}
	if _, err := secrets.Create(t.Context(), secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resp, err := s.etcd.Client.Get(t.Context(), "/registry/secrets/default/db")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("etcd get: %v", err)
	}
	// The value is base64 in the stored JSON; neither form may be in clear.
	expectStored(t, resp.Kvs[0].Value, "orch:enc:aescbc:v1:key1:", "dmVyeS1zZWNyZXQtdmFsdWU=")
	got, err := secrets.Get(t.Context(), "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if data, _, _ := unstructured.NestedString(got.Object, "data", "password"); data != "dmVyeS1zZWNyZXQtdmFsdWU=" {
		t.Fatalf("read back %v", got.Object["data"])
	}
}
