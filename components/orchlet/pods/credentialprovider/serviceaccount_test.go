package credentialprovider

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// fakeAccounts are an API server's service accounts: tokens numbered in turn, or fixed.
type fakeAccounts struct {
	accounts map[string]*corev1.ServiceAccount
	token    string
	asked    []*authenticationv1.TokenRequest
}

func (f *fakeAccounts) GetServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	if sa, ok := f.accounts[namespace+"/"+name]; ok {
		return sa, nil
	}
	return nil, errors.New("serviceaccount not found")
}

func (f *fakeAccounts) CreateToken(_ context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	f.asked = append(f.asked, tr)
	out := tr.DeepCopy()
	out.Status.Token = f.token
	if out.Status.Token == "" {
		out.Status.Token = "token-" + strconv.Itoa(len(f.asked))
	}
	return out, nil
}

func tokenFixture(t *testing.T, cacheType string, require bool, token string) (*fixture, *fakeAccounts) {
	t.Helper()
	f := newFixture(t, EnvVar{Name: "KEYTYPE", Value: "Registry"})
	f.ps.plugins[0].TokenAttributes = &TokenAttributes{
		ServiceAccountTokenAudience: "registry.example.com", CacheType: cacheType, RequireServiceAccount: ptr.To(require),
		RequiredServiceAccountAnnotationKeys: []string{"example.com/role"}, OptionalServiceAccountAnnotationKeys: []string{"example.com/team"},
	}
	if !require {
		f.ps.plugins[0].TokenAttributes.RequiredServiceAccountAnnotationKeys = nil
	}
	sa := func(ns, name, uid string, annotations map[string]string) *corev1.ServiceAccount {
		return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("sa-" + uid), Annotations: annotations}}
	}
	accounts := &fakeAccounts{token: token, accounts: map[string]*corev1.ServiceAccount{
		"team/puller": sa("team", "puller", "1", map[string]string{"example.com/role": "pull", "example.com/team": "a", "other": "x"}),
		"team/other":  sa("team", "other", "2", map[string]string{"example.com/role": "pull"}),
		"team/plain":  sa("team", "plain", "3", nil),
	}}
	f.ps.SetServiceAccounts(accounts)
	return f, accounts
}

func pod(name, sa string) Pod {
	return Pod{Namespace: "team", Name: name, UID: types.UID("uid-" + name), ServiceAccountName: sa}
}

// Service account token mode, as the kubelet v1.34 runs it: the request carries a token of the
// pod's service account for the audience, bound to the pod, and the account's required and
// optional annotations; without a required annotation, or without a service account when one is
// required, the plugin is not run; answers are cached per service account (or per token); a
// plugin echoing the token as the password is refused unless answers are cached per token.
func TestServiceAccountTokenMode(t *testing.T) {
	ctx := context.Background()
	const image = "registry.example.com/team/app"

	f, accounts := tokenFixture(t, CacheTypeServiceAccount, true, "")
	if got := f.ps.Provide(ctx, Pod{Namespace: "team", Name: "static"}, image); got != nil || f.runs(t) != nil {
		t.Fatalf("a pod without a service account, one required: %v, runs %v", got, f.runs(t))
	}
	if got := f.ps.Provide(ctx, pod("p0", "plain"), image); got != nil || f.runs(t) != nil {
		t.Fatalf("a service account without the required annotation: %v, runs %v", got, f.runs(t))
	}
	if got := f.ps.Provide(ctx, pod("p1", "puller"), image); len(got) != 1 {
		t.Fatalf("credentials %v", got)
	}
	runs := f.runs(t)
	if len(runs) != 1 || !strings.Contains(runs[0], `"serviceAccountToken":"token-1"`) ||
		!strings.Contains(runs[0], `"serviceAccountAnnotations":{"example.com/role":"pull","example.com/team":"a"}`) {
		t.Errorf("request %q, want the token and the required and optional annotations only", runs)
	}
	tr := accounts.asked[len(accounts.asked)-1]
	if tr.UID != "sa-1" || len(tr.Spec.Audiences) != 1 || tr.Spec.Audiences[0] != "registry.example.com" ||
		tr.Spec.BoundObjectRef == nil || tr.Spec.BoundObjectRef.Kind != "Pod" || tr.Spec.BoundObjectRef.Name != "p1" || tr.Spec.BoundObjectRef.UID != "uid-p1" {
		t.Errorf("token request %+v", tr)
	}
	// Another pod of the same account: the cached answer (a token is still asked for, as the
	// kubelet asks). Another account: the plugin again.
	f.ps.Provide(ctx, pod("p2", "puller"), image)
	if n := len(f.runs(t)); n != 1 {
		t.Errorf("the same service account ran the plugin %d times, want 1", n)
	}
	f.ps.Provide(ctx, pod("p3", "other"), image)
	if n := len(f.runs(t)); n != 2 {
		t.Errorf("another service account: %d runs, want 2", n)
	}

	// Per token: each pull's token is new, so each runs the plugin.
	f, _ = tokenFixture(t, CacheTypeToken, true, "")
	f.ps.Provide(ctx, pod("p1", "puller"), image)
	f.ps.Provide(ctx, pod("p2", "puller"), image)
	if n := len(f.runs(t)); n != 2 {
		t.Errorf("Token cache type: %d runs, want 2", n)
	}

	// Not required: a pod without a service account runs the plugin without a token.
	f, _ = tokenFixture(t, CacheTypeServiceAccount, false, "")
	if got := f.ps.Provide(ctx, Pod{Namespace: "team", Name: "static"}, image); len(got) != 1 {
		t.Fatalf("not required, no service account: %v", got)
	}
	if runs := f.runs(t); len(runs) != 1 || strings.Contains(runs[0], "serviceAccountToken") {
		t.Errorf("request %q, want no token", runs)
	}

	// The fake plugin answers password "p": a token "p" echoed back is refused under
	// ServiceAccount caching, allowed under Token caching.
	f, _ = tokenFixture(t, CacheTypeServiceAccount, true, "p")
	if got := f.ps.Provide(ctx, pod("p1", "puller"), image); got != nil {
		t.Errorf("the token echoed as the password: %v, want nothing", got)
	}
	f, _ = tokenFixture(t, CacheTypeToken, true, "p")
	if got := f.ps.Provide(ctx, pod("p1", "puller"), image); len(got) != 1 {
		t.Errorf("the token echoed under Token caching: %v", got)
	}

	// No API server: a pod with a service account gets nothing.
	f, _ = tokenFixture(t, CacheTypeServiceAccount, true, "")
	f.ps.SetServiceAccounts(nil)
	if got := f.ps.Provide(ctx, pod("p1", "puller"), image); got != nil || f.runs(t) != nil {
		t.Errorf("without an API server: %v, runs %v", got, f.runs(t))
	}
}
