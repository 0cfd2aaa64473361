package app_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch.io/orch/components/apiserver/app"
)

// post sends a JSON body to path and decodes the answer into out.
func post(t *testing.T, client kubernetes.Interface, path string, in, out any) {
	t.Helper()
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := client.CoreV1().RESTClient().Post().AbsPath(path).SetHeader("Content-Type", "application/json").Body(body).Do(context.Background()).Raw()
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
}

// With --service-account-issuer, --service-account-signing-key-file and --service-account-key-file
// orch-apiserver issues tokens with the key, authenticates them, makes default service accounts and
// publishes its serving certificate as the root CA.
func TestRunIssuesServiceAccountTokens(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "sa.key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, func(o *app.Options) {
		o.ServiceAccounts.Issuers = []string{"https://orch.example", "https://old.example"}
		o.ServiceAccounts.SigningKeyFile = keyFile
		o.ServiceAccounts.KeyFiles = []string{keyFile}
		o.ServiceAccounts.MaxExpiration = 2 * time.Hour
	})
	client, err := kubernetes.NewForConfig(s.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no default service account: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var tr authenticationv1.TokenRequest
	post(t, client, "/api/v1/namespaces/default/serviceaccounts/default/token", map[string]any{
		"apiVersion": "authentication.orch.io/v1", "kind": "TokenRequest", "spec": map[string]any{"expirationSeconds": 3 * 3600}}, &tr)
	if got := tr.Status.ExpirationTimestamp.Sub(tr.CreationTimestamp.Time); got != 2*time.Hour {
		t.Errorf("token for %v, want the 2h maximum", got)
	}
	var review authenticationv1.TokenReview
	post(t, client, "/apis/authentication.orch.io/v1/tokenreviews", map[string]any{
		"apiVersion": "authentication.orch.io/v1", "kind": "TokenReview", "spec": map[string]any{"token": tr.Status.Token}}, &review)
	if !review.Status.Authenticated || review.Status.User.Username != "system:serviceaccount:default:default" {
		t.Fatalf("review %+v", review.Status)
	}
	// The token is a credential of its own.
	cfg := s.restConfig()
	cfg.BearerToken = tr.Status.Token
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := as.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("listing pods with the token: %v", err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	created, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Spec.ServiceAccountName != "default" {
		t.Errorf("a pod naming no service account runs as %q", created.Spec.ServiceAccountName)
	}
	if v := created.Spec.Volumes; len(v) != 1 || v[0].Projected == nil || len(v[0].Projected.Sources) != 3 {
		t.Errorf("volumes %+v, want the token volume mounted", v)
	}
	// Pods verify the server with its serving certificate, published in every namespace.
	serving, err := os.ReadFile(s.certFile())
	if err != nil {
		t.Fatal(err)
	}
	for {
		cm, err := client.CoreV1().ConfigMaps("default").Get(ctx, "orch-root-ca.crt", metav1.GetOptions{})
		if err == nil && cm.Data["ca.crt"] == string(serving) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("orch-root-ca.crt: %v %v", cm, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
