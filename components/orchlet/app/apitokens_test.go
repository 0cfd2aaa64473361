package app

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authn/serviceaccount"
	"orch.io/orch/components/orchlet/host"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/fakecritest"
	"orch.io/orch/fakecri/script"
)

const tokenIssuer = "https://orch.test"

// withServiceAccountTokens makes the server issue service account tokens on clk and accept them.
func withServiceAccountTokens(t *testing.T, clk clock.Clock) func(*server.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := serviceaccount.NewIssuer(tokenIssuer, key)
	if err != nil {
		t.Fatal(err)
	}
	return func(c *server.Config) {
		sa := &server.ServiceAccounts{Issuer: issuer, Audiences: []string{tokenIssuer}}
		sa.SetRootCA([]byte("the cluster CA\n"))
		c.Clock, c.ServiceAccounts = clk, sa
		tokens := serviceaccount.NewAuthenticator([]string{tokenIssuer}, []crypto.PublicKey{key.Public()}, sa.Audiences, sa, clk)
		c.Authenticator = authn.Union(authn.Bearer(tokens), authn.Anonymous())
	}
}

// tokenReview asks the server who token is.
func tokenReview(t *testing.T, client kubernetes.Interface, token string) authenticationv1.TokenReviewStatus {
	t.Helper()
	body, err := json.Marshal(authenticationv1.TokenReview{TypeMeta: metav1.TypeMeta{APIVersion: "authentication.orch.io/v1", Kind: "TokenReview"},
		Spec: authenticationv1.TokenReviewSpec{Token: token}})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := client.CoreV1().RESTClient().Post().AbsPath("/apis/authentication.orch.io/v1/tokenreviews").
		SetHeader("Content-Type", "application/json").Body(body).Do(context.Background()).Raw()
	if err != nil {
		t.Fatal(err)
	}
	var out authenticationv1.TokenReview
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out.Status
}

func issuedAt(t *testing.T, token string) float64 {
	t.Helper()
	parts := strings.Split(token, ".")
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		IAT float64 `json:"iat"`
	}
	if err := json.Unmarshal(data, &claims); err != nil {
		t.Fatal(err)
	}
	return claims.IAT
}

// In API-server mode a pod's serviceAccountToken projection holds a token of its service account
// bound to it, which the server authenticates; past 80% of its life, on the agent's clock, the
// agent writes a new one. The server mounts a token of its own choosing, with the root CA and the
// namespace. Its image comes from a registry that wants the pull secret's credentials.
func TestAPIServerModeServiceAccountToken(t *testing.T) {
	clk := clock.NewMock()
	clk.Set(time.Now())
	kubeconfig, client, _ := apiServer(t, nil, withServiceAccountTokens(t, clk))
	// The registry of private/app wants credentials, which only the pull secret has.
	rt, sock := fakecritest.Start(t, fakecri.Options{Seed: 1, Script: &script.Script{Images: []script.ImageRule{
		{Match: "registry.example.com/private/*", Auth: &script.Auth{Username: "puller", Password: "s3cret"}}}}})
	o := parse(t, "--enable-server=false", "--read-only-port=0", "--healthz-port=0", "--container-runtime-endpoint="+sock,
		"--orchconfig="+kubeconfig, "--hostname-override=node-a", "--root-dir="+t.TempDir(), "--sync-frequency=1s")
	cancel, done := runAsync(o, host.NewFake(), clk)
	defer func() {
		cancel()
		if err := wait(t, done); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	if _, err := client.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pull := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "pull"}, Type: corev1.SecretTypeDockerConfigJson,
		StringData: map[string]string{corev1.DockerConfigJsonKey: `{"auths": {"https://registry.example.com": {"username": "puller", "password": "s3cret"}}}`}}
	if _, err := client.CoreV1().Secrets("default").Create(ctx, pull, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	life := int64(600)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: corev1.PodSpec{
		NodeName: "node-a", ServiceAccountName: "builder",
		Volumes: []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &life}}}}}}},
		ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}},
		Containers:       []corev1.Container{{Name: "app", Image: "registry.example.com/private/app:1", VolumeMounts: []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets/tokens"}}}},
	}}
	created, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var hostPath, apiAccess string
	waitFor(t, "the container created with the token volumes", func() (bool, error) {
		cfg := criConfig(t, rt, "web", "app")
		if cfg == nil {
			return false, nil
		}
		for _, m := range cfg.Mounts {
			switch m.ContainerPath {
			case "/var/run/secrets/tokens":
				hostPath = m.HostPath
			case "/var/run/secrets/orch.io/serviceaccount":
				apiAccess = m.HostPath
			}
		}
		return hostPath != "" && apiAccess != "", nil
	})
	// The volume the server mounted: a token of the pod, the root CA, the namespace.
	for file, want := range map[string]string{"ca.crt": "the cluster CA\n", "namespace": "default"} {
		if data, err := os.ReadFile(filepath.Join(apiAccess, file)); err != nil || string(data) != want {
			t.Errorf("%s: %q %v, want %q", file, data, err, want)
		}
	}
	if auto, err := os.ReadFile(filepath.Join(apiAccess, "token")); err != nil || !tokenReview(t, client, string(auto)).Authenticated {
		t.Errorf("the mounted token %q (%v) does not authenticate", auto, err)
	}
	if pulls := rt.Calls(calllog.Filter{Method: "PullImage"}); len(pulls) == 0 || !strings.Contains(pulls[len(pulls)-1].Request, "auth_user=puller") {
		t.Errorf("pulls %+v, want one with the pull secret's user", pulls)
	}
	file := filepath.Join(hostPath, "token")
	first, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	status := tokenReview(t, client, string(first))
	if !status.Authenticated || status.User.Username != "system:serviceaccount:default:builder" ||
		strings.Join(status.User.Extra[serviceaccount.PodUIDKey], "") != string(created.UID) {
		t.Fatalf("the pod's token: %+v", status)
	}
	if info, err := os.Stat(file); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("token file mode %v %v, want 0644", info.Mode(), err)
	}

	// Short of 80% of its life the token stays; past it, the next sync writes another.
	clk.Add(470 * time.Second)
	time.Sleep(200 * time.Millisecond)
	if data, _ := os.ReadFile(file); string(data) != string(first) {
		t.Fatal("the token was renewed before 80% of its life")
	}
	clk.Add(11 * time.Second)
	var second []byte
	waitFor(t, "the token renewed", func() (bool, error) {
		clk.Add(10 * time.Second)
		second, err = os.ReadFile(file)
		return err == nil && string(second) != string(first), err
	})
	if issuedAt(t, string(second)) <= issuedAt(t, string(first)) {
		t.Errorf("the new token was issued at %v, the first at %v", issuedAt(t, string(second)), issuedAt(t, string(first)))
	}
	if status := tokenReview(t, client, string(second)); !status.Authenticated || status.User.Username != "system:serviceaccount:default:builder" {
		t.Errorf("the renewed token: %+v", status)
	}
}
