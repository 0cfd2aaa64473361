package app

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/benbjohnson/clock"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"orch.io/orch/components/apiserver/server"
	"orch.io/orch/components/authn"
	"orch.io/orch/components/authn/serviceaccount"
	"orch.io/orch/components/authz"
	"orch.io/orch/components/authz/rbac"
	"orch.io/orch/components/certs/certstest"
	"orch.io/orch/components/orchlet/host"
	"orch.io/orch/fakecri"
	"orch.io/orch/fakecri/calllog"
	"orch.io/orch/fakecri/fakecritest"
	"orch.io/orch/fakecri/script"
)

// nodeRBACAPIServer starts orch-apiserver's handler as a cluster with RBAC runs it: the Node and
// RBAC modes (so NodeRestriction), service account tokens, node-a by its client certificate and an
// administrator (system:masters) by token. It answers the agent's kubeconfig and the
// administrator's client.
func nodeRBACAPIServer(t *testing.T) (string, kubernetes.Interface) {
	t.Helper()
	dir := t.TempDir()
	ca := certstest.NewCA(t, "orch-clients")
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	certstest.WriteFile(t, filepath.Join(dir, "tokens.csv"), []byte("admin-token,admin,u-0,system:masters\n"))
	tf, err := authn.NewTokenFile(filepath.Join(dir, "tokens.csv"))
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	issuer, err := serviceaccount.NewIssuer(tokenIssuer, key)
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.New()
	sa := &server.ServiceAccounts{Issuer: issuer, Audiences: []string{tokenIssuer}}
	sa.SetRootCA([]byte("the cluster CA\n"))
	tokens := serviceaccount.NewAuthenticator([]string{tokenIssuer}, []crypto.PublicKey{key.Public()}, sa.Audiences, sa, clk)
	node, roles := &server.NodeAuthorization{}, rbac.NewIndex()
	az, err := authz.New("Node,RBAC", node.Pod, node.References, rbac.Authorizer(roles))
	if err != nil {
		t.Fatal(err)
	}
	return serveToNodeA(t, dir, ca, pool, server.Config{
		Clock: clk, ServiceAccounts: sa, Roles: roles, Node: node,
		Authenticator: authn.Union(authn.X509(pool), tf, authn.Bearer(tokens)), Authorizer: az,
	}, "admin-token")
}

// tokenPlugin answers a request that carries a service account token with the registry's
// credentials, and one without a token with none, so a pull succeeds only through token mode.
const tokenPlugin = `#!/bin/sh
request=$(cat)
case "$request" in
*'"serviceAccountToken":"ey'*) auth='"registry.example.com": {"username": "puller", "password": "s3cret"}' ;;
*) auth= ;;
esac
echo "{\"apiVersion\": \"credentialprovider.kubelet.k8s.io/v1\", \"kind\": \"CredentialProviderResponse\", \"cacheKeyType\": \"Registry\", \"auth\": {$auth}}"
`

// A credential provider plugin in service account token mode under NodeRestriction: its audience
// is projected by no pod, so the node's TokenRequest for it is refused until RBAC grants node-a
// request-serviceaccounts-token-audience on it (a ClusterRole and a ClusterRoleBinding, as
// Kubernetes documents for the kubelet); then the token is issued, the plugin answers and the
// private image is pulled with its credentials.
func TestCredentialProviderTokenAudienceGrantedByRBAC(t *testing.T) {
	kubeconfig, admin := nodeRBACAPIServer(t)
	rt, sock := fakecritest.Start(t, fakecri.Options{Seed: 1, Script: &script.Script{Images: []script.ImageRule{
		{Match: "registry.example.com/private/*", Auth: &script.Auth{Username: "puller", Password: "s3cret"}}}}})
	dir := t.TempDir()
	certstest.WriteFile(t, filepath.Join(dir, "token-plugin"), []byte(tokenPlugin))
	if err := os.Chmod(filepath.Join(dir, "token-plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "credential-providers.yaml")
	certstest.WriteFile(t, config, []byte(`apiVersion: orchlet.config.orch.io/v1
kind: CredentialProviderConfig
providers:
- name: token-plugin
  matchImages: [registry.example.com]
  defaultCacheDuration: 5m
  apiVersion: credentialprovider.kubelet.k8s.io/v1
  tokenAttributes: {serviceAccountTokenAudience: registry.example.com, requireServiceAccount: true, cacheType: ServiceAccount}
`))
	o := parse(t, "--enable-server=false", "--read-only-port=0", "--healthz-port=0", "--container-runtime-endpoint="+sock,
		"--orchconfig="+kubeconfig, "--hostname-override=node-a", "--root-dir="+t.TempDir(), "--sync-frequency=1s",
		"--kube-api-content-type=application/json",
		"--image-credential-provider-config="+config, "--image-credential-provider-bin-dir="+dir)
	cancel, done := runAsync(o, host.NewFake(), clock.New())
	defer func() {
		cancel()
		if err := wait(t, done); err != nil {
			t.Error(err)
		}
	}()
	ctx := context.Background()
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "node-a registered", func() (bool, error) {
		_, err := admin.CoreV1().Nodes().Get(ctx, "node-a", metav1.GetOptions{})
		return err == nil, nil
	})
	startPod := func(name, image string) {
		t.Helper()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{
			NodeName: "node-a", ServiceAccountName: "builder", Containers: []corev1.Container{{Name: "app", Image: image}}}}
		if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	pulls := func(image string) (tried, authorized bool) {
		for _, c := range rt.Calls(calllog.Filter{Method: "PullImage"}) {
			if strings.Contains(c.Request, image) {
				tried = true
				authorized = authorized || strings.Contains(c.Request, "auth_user=puller")
			}
		}
		return tried, authorized
	}

	// Without the grant: NodeRestriction refuses the token, the plugin is not run, the pull goes
	// without credentials and the registry refuses it.
	startPod("before", "registry.example.com/private/app:1")
	waitFor(t, "the pull of pod before tried", func() (bool, error) {
		tried, _ := pulls("registry.example.com/private/app:1")
		return tried, nil
	})
	if _, authorized := pulls("registry.example.com/private/app:1"); authorized {
		t.Fatal("the image was pulled with the plugin's credentials before RBAC granted the audience")
	}
	if p, err := admin.CoreV1().Pods("default").Get(ctx, "before", metav1.GetOptions{}); err != nil || p.Status.Phase == corev1.PodRunning {
		t.Fatalf("pod before: %v %v, want it not running", p.Status.Phase, err)
	}

	// The grant: the audience as resource, the service account as resource name.
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "registry-audience"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"registry.example.com"}, ResourceNames: []string{"builder"},
		Verbs: []string{"request-serviceaccounts-token-audience"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "node-a-registry-audience"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.orch.io", Kind: "ClusterRole", Name: "registry-audience"},
		Subjects: []rbacv1.Subject{{APIGroup: "rbac.authorization.orch.io", Kind: "User", Name: "system:node:node-a"}}}
	if err := createRBAC(ctx, admin, role, binding); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the authorizer following the binding", func() (bool, error) {
		review, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "system:node:node-a", Groups: []string{"system:nodes"}, ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: "default", Verb: "request-serviceaccounts-token-audience", Resource: "registry.example.com", Name: "builder"}}}, metav1.CreateOptions{})
		return err == nil && review.Status.Allowed, err
	})
	startPod("after", "registry.example.com/private/app:2")
	waitFor(t, "pod after running with the plugin's credentials", func() (bool, error) {
		_, authorized := pulls("registry.example.com/private/app:2")
		p, err := admin.CoreV1().Pods("default").Get(ctx, "after", metav1.GetOptions{})
		return authorized && err == nil && p.Status.Phase == corev1.PodRunning, err
	})
}

// createRBAC writes a cluster role and its binding as the administrator.
func createRBAC(ctx context.Context, admin kubernetes.Interface, role *rbacv1.ClusterRole, binding *rbacv1.ClusterRoleBinding) error {
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("the cluster role: %w", err)
	}
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("the binding: %w", err)
	}
	return nil
}
