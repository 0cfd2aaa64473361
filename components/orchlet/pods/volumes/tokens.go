package volumes

import (
	"context"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"orch.io/orch/components/orchlet/pods/security"
)

// Tokens asks the API server for service account tokens (serviceaccounts/<name>/token). Only an
// agent in API-server mode has one.
type Tokens interface {
	CreateToken(ctx context.Context, namespace, serviceAccount string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// The kubelet's token manager's limits: a token is renewed after 80% of its life or after 24h,
// less up to 10s of jitter so that the tokens of many pods are not renewed at once.
const (
	tokenMaxTTL    = 24 * time.Hour
	tokenMaxJitter = 10 * time.Second
)

// defaultTokenExpirationSeconds is the API's default expirationSeconds of a serviceAccountToken
// projection.
const defaultTokenExpirationSeconds = 3600

// tokenManager is the kubelet's token manager (pkg/kubelet/token): tokens cached by request and
// renewed on the agent's clock, an expired one dropped.
type tokenManager struct {
	client Tokens
	clock  clock.Clock
	jitter func() float64

	mu    sync.Mutex
	cache map[string]*authenticationv1.TokenRequest
}

// token is the token tr asks for of the service account namespace/name: the cached one while it
// needs no refresh, else a new one; a failed refresh keeps a cached token that has not expired.
func (t *tokenManager) token(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	key := tokenKey(namespace, name, tr)
	t.mu.Lock()
	cached, ok := t.cache[key]
	t.mu.Unlock()
	if ok && !t.requiresRefresh(cached) {
		return cached, nil
	}
	fresh, err := t.client.CreateToken(ctx, namespace, name, tr)
	if err != nil {
		if ok && !t.expired(cached) {
			klog.FromContext(ctx).Error(err, "Couldn't update token", "cacheKey", key)
			return cached, nil
		}
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, c := range t.cache {
		if t.expired(c) {
			delete(t.cache, k)
		}
	}
	t.cache[key] = fresh
	return fresh, nil
}

// forget drops the tokens bound to the pod uid, as the kubelet's DeleteServiceAccountToken.
func (t *tokenManager) forget(uid string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, c := range t.cache {
		if ref := c.Spec.BoundObjectRef; ref != nil && string(ref.UID) == uid {
			delete(t.cache, k)
		}
	}
}

func (t *tokenManager) expired(tr *authenticationv1.TokenRequest) bool {
	return t.clock.Now().After(tr.Status.ExpirationTimestamp.Time)
}

// requiresRefresh is the kubelet's: past 80% of the token's life, or 24h after it was issued.
func (t *tokenManager) requiresRefresh(tr *authenticationv1.TokenRequest) bool {
	if tr.Spec.ExpirationSeconds == nil {
		return false
	}
	now := t.clock.Now()
	exp := tr.Status.ExpirationTimestamp.Time
	life := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	iat := exp.Add(-life)
	jitter := time.Duration(t.jitter()*tokenMaxJitter.Seconds()) * time.Second
	if now.After(iat.Add(tokenMaxTTL - jitter)) {
		return true
	}
	return now.After(exp.Add(-life*20/100 - jitter))
}

// tokenKey is the kubelet's keyFunc: one token per service account, audiences, lifetime and bound object.
func tokenKey(namespace, name string, tr *authenticationv1.TokenRequest) string {
	var exp int64
	if tr.Spec.ExpirationSeconds != nil {
		exp = *tr.Spec.ExpirationSeconds
	}
	var ref authenticationv1.BoundObjectReference
	if tr.Spec.BoundObjectRef != nil {
		ref = *tr.Spec.BoundObjectRef
	}
	return fmt.Sprintf("%q/%q/%#v/%#v/%#v", name, namespace, tr.Spec.Audiences, exp, ref)
}

// serviceAccountName is the service account a pod runs as: spec.serviceAccountName, else the
// deprecated spec.serviceAccount (the v1 conversion), else the namespace's default.
func serviceAccountName(pod *corev1.Pod) string {
	switch {
	case pod.Spec.ServiceAccountName != "":
		return pod.Spec.ServiceAccountName
	case pod.Spec.DeprecatedServiceAccount != "":
		return pod.Spec.DeprecatedServiceAccount
	}
	return "default"
}

// tokenFile adds a serviceAccountToken projection's file to files, as the kubelet's projected
// volume plugin: a token bound to the pod, for the projection's audience (the API's when it
// names none), mode 0600 when the pod has an fsGroup or one user runs all its containers (who
// then owns it), else the volume's mode.
func (m *Manager) tokenFile(ctx context.Context, p Pod, src *corev1.ServiceAccountTokenProjection, mode int32, files map[string]fileContent) error {
	pod := p.Pod
	exp := src.ExpirationSeconds
	if exp == nil {
		d := int64(defaultTokenExpirationSeconds)
		exp = &d
	}
	var auds []string
	if src.Audience != "" {
		auds = []string{src.Audience}
	}
	tr, err := m.tokens.token(ctx, pod.Namespace, serviceAccountName(pod), &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			Audiences:         auds,
			ExpirationSeconds: exp,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
		},
	})
	if err != nil {
		return err
	}
	f := fileContent{data: []byte(tr.Status.Token), mode: fs.FileMode(mode)}
	user := fsUser(pod)
	if user != nil || (pod.Spec.SecurityContext != nil && pod.Spec.SecurityContext.FSGroup != nil) {
		f.mode = 0o600
	}
	f.owner = user
	files[src.Path] = f
	return nil
}

// fsUser is the kubelet's FsUserFrom: the user every container runs as, when they all name the
// same one; nil otherwise.
func fsUser(pod *corev1.Pod) *int64 {
	var user *int64
	for _, c := range allContainers(pod) {
		u := security.Effective(pod, &c).RunAsUser
		if u == nil || (user != nil && *user != *u) {
			return nil
		}
		user = u
	}
	return user
}
