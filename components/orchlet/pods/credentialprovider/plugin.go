package credentialprovider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// execTimeout bounds one run of a plugin, as the kubelet bounds it.
const execTimeout = time.Minute

// The cache key types of a response: the credentials hold for the image, its registry, or all.
const (
	CacheKeyImage    = "Image"
	CacheKeyRegistry = "Registry"
	CacheKeyGlobal   = "Global"
)

// Auth is a registry credential.
type Auth struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// request and response are Kubernetes' CredentialProviderRequest and CredentialProviderResponse.
type request struct {
	metav1.TypeMeta           `json:",inline"`
	Image                     string            `json:"image"`
	ServiceAccountToken       string            `json:"serviceAccountToken,omitempty"`
	ServiceAccountAnnotations map[string]string `json:"serviceAccountAnnotations,omitempty"`
}

type response struct {
	metav1.TypeMeta `json:",inline"`
	CacheKeyType    string           `json:"cacheKeyType"`
	CacheDuration   *metav1.Duration `json:"cacheDuration,omitempty"`
	Auth            map[string]Auth  `json:"auth,omitempty"`
}

// Providers are the configured plugins, asked in the configuration's order.
type Providers struct {
	plugins []*plugin
	// accounts are the API server's service accounts, for plugins in service account token mode.
	accounts ServiceAccounts
}

// Pod is the pod an image is pulled for, whose service account a plugin in service account token
// mode gets a token of.
type Pod struct {
	Namespace, Name    string
	UID                types.UID
	ServiceAccountName string
}

// ServiceAccounts reads a service account and asks the TokenRequest API for a token of it.
type ServiceAccounts interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	CreateToken(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// SetServiceAccounts gives the plugins the API server's service accounts; call it before the
// first pull. Without it (no API server) a plugin in service account token mode answers only for
// pods without a service account, when it does not require one.
func (ps *Providers) SetServiceAccounts(sa ServiceAccounts) { ps.accounts = sa }

type plugin struct {
	Provider
	bin    string
	clk    clock.Clock
	logger klog.Logger
	// environ is the agent's environment the plugin inherits.
	environ func() []string

	mu    sync.Mutex // one run of the plugin at a time: a second asker finds the first's answer cached
	cache map[string]cached
}

type cached struct {
	auth    map[string]Auth
	expires time.Time
}

// New checks that binDir holds each provider's executable, as the kubelet's
// RegisterCredentialProviderPlugins does, and returns the providers, caching on clk.
func New(cfg *Config, binDir string, clk clock.Clock, logger klog.Logger) (*Providers, error) {
	if _, err := os.Stat(binDir); err != nil {
		return nil, fmt.Errorf("plugin binary directory %s did not exist", binDir)
	}
	ps := &Providers{}
	for _, p := range cfg.Providers {
		bin := filepath.Join(binDir, p.Name)
		if _, err := os.Stat(bin); err != nil {
			return nil, fmt.Errorf("plugin binary executable %s did not exist", bin)
		}
		ps.plugins = append(ps.plugins, &plugin{Provider: p, bin: bin, clk: clk, logger: logger, environ: os.Environ, cache: map[string]cached{}})
	}
	return ps, nil
}

// Provide asks each plugin whose matchImages match the image's repository (its registry host,
// port and path, as the kubelet's puller gives it) for credentials, each plugin's answer a docker
// configuration of locations: from its cache while the answer holds, else by running it. A plugin
// that fails gives nothing, and the failure is logged.
func (ps *Providers) Provide(ctx context.Context, pod Pod, image string) []map[string]Auth {
	var out []map[string]Auth
	for _, p := range ps.plugins {
		if auth := p.provide(ctx, ps.accounts, pod, image); len(auth) > 0 {
			out = append(out, auth)
		}
	}
	return out
}

func (p *plugin) provide(ctx context.Context, accounts ServiceAccounts, pod Pod, image string) map[string]Auth {
	if !slices.ContainsFunc(p.MatchImages, func(m string) bool { return URLsMatch(m, image) }) {
		return nil
	}
	token, annotations, saKey, ok := p.serviceAccountToken(ctx, accounts, pod)
	if !ok {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.clk.Now()
	for key, c := range p.cache {
		if !now.Before(c.expires) {
			delete(p.cache, key)
		}
	}
	for _, key := range []string{"image:" + image, "registry:" + registry(image), "global"} {
		if c, ok := p.cache[cacheKey(key, saKey)]; ok {
			return c.auth
		}
	}
	resp, err := p.exec(ctx, image, token, annotations)
	if err != nil {
		p.logger.Error(err, "Failed getting credential from external registry credential provider", "provider", p.Name, "image", image)
		return nil
	}
	if token != "" && p.TokenAttributes.CacheType != CacheTypeToken {
		for _, a := range resp.Auth {
			if a.Password == token {
				p.logger.Error(nil, "Credential provider plugin returned the service account token as the password, which is not allowed when service account cache type is not set to 'Token'", "provider", p.Name, "image", image)
				return nil
			}
		}
	}
	var key string
	switch resp.CacheKeyType {
	case CacheKeyImage:
		key = "image:" + image
	case CacheKeyRegistry:
		key = "registry:" + registry(image)
	case CacheKeyGlobal:
		key = "global"
	default:
		p.logger.Error(nil, "Credential provider plugin did not return a valid cacheKeyType", "provider", p.Name, "cacheKeyType", resp.CacheKeyType)
		return nil
	}
	keep := p.DefaultCacheDuration.Duration
	if resp.CacheDuration != nil {
		keep = resp.CacheDuration.Duration
	}
	if keep > 0 {
		p.cache[cacheKey(key, saKey)] = cached{auth: resp.Auth, expires: now.Add(keep)}
	}
	return resp.Auth
}

// serviceAccountToken is service account token mode's part of a request, as the kubelet's
// pluginProvider.provide prepares it: for a pod with a service account, the account's required
// annotations (all present, or the plugin is not run) and optional ones, and a token of it for the
// audience bound to the pod; the key the answer is cached under beside the image's (namespace,
// name, UID and annotations, and the token's hash with the Token cache type). A pod without a
// service account runs the plugin without a token unless requireServiceAccount; ok is false when
// the plugin is not to run.
func (p *plugin) serviceAccountToken(ctx context.Context, accounts ServiceAccounts, pod Pod) (token string, annotations map[string]string, key string, ok bool) {
	t := p.TokenAttributes
	if t == nil {
		return "", nil, "", true
	}
	if pod.ServiceAccountName == "" {
		return "", nil, "", !*t.RequireServiceAccount
	}
	if accounts == nil {
		p.logger.Error(nil, "Failed to get service account: no API server to read it from", "provider", p.Name, "serviceAccount", pod.Namespace+"/"+pod.ServiceAccountName)
		return "", nil, "", false
	}
	sa, err := accounts.GetServiceAccount(ctx, pod.Namespace, pod.ServiceAccountName)
	if err != nil {
		p.logger.Error(err, "Failed to get service account", "provider", p.Name, "serviceAccount", pod.Namespace+"/"+pod.ServiceAccountName)
		return "", nil, "", false
	}
	annotations = map[string]string{}
	for _, k := range t.RequiredServiceAccountAnnotationKeys {
		v, found := sa.Annotations[k]
		if !found {
			p.logger.V(5).Info("Required service account annotation not found: the plugin is not run", "provider", p.Name, "serviceAccount", pod.Namespace+"/"+pod.ServiceAccountName, "annotation", k)
			return "", nil, "", false
		}
		annotations[k] = v
	}
	for _, k := range t.OptionalServiceAccountAnnotationKeys {
		if v, found := sa.Annotations[k]; found {
			annotations[k] = v
		}
	}
	tr, err := accounts.CreateToken(ctx, pod.Namespace, pod.ServiceAccountName, &authenticationv1.TokenRequest{
		ObjectMeta: metav1.ObjectMeta{UID: sa.UID},
		Spec: authenticationv1.TokenRequestSpec{
			Audiences:      []string{t.ServiceAccountTokenAudience},
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
		},
	})
	if err != nil {
		p.logger.Error(err, "Error getting service account token", "provider", p.Name, "serviceAccount", pod.Namespace+"/"+pod.ServiceAccountName)
		return "", nil, "", false
	}
	token = tr.Status.Token
	parts := []string{pod.Namespace, pod.ServiceAccountName, string(sa.UID)}
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		parts = append(parts, k, annotations[k])
	}
	if t.CacheType == CacheTypeToken {
		parts = append(parts, "token", fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(token))))
	}
	return token, annotations, cacheKey(parts...), true
}

// cacheKey joins its parts length-prefixed, so that no two lists of parts give one key.
func cacheKey(parts ...string) string {
	var b strings.Builder
	for _, s := range parts {
		fmt.Fprintf(&b, "%d:%s", len(s), s)
	}
	return b.String()
}

// exec runs the plugin as the kubelet's execPlugin: the request (with the service account's token
// and annotations in service account token mode) on stdin, the configured
// arguments, the agent's environment with the configured variables over it, at most a minute;
// the response on stdout must speak the configured version.
func (p *plugin) exec(ctx context.Context, image, token string, annotations map[string]string) (*response, error) {
	req, err := json.Marshal(request{TypeMeta: metav1.TypeMeta{APIVersion: p.APIVersion, Kind: "CredentialProviderRequest"}, Image: image,
		ServiceAccountToken: token, ServiceAccountAnnotations: annotations})
	if err != nil {
		return nil, fmt.Errorf("failed to encode auth request: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, execTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, p.bin, p.Args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(req), &stdout, &stderr
	cmd.Env = mergeEnv(p.environ(), p.Env)
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("error execing credential provider plugin %s for image %s: %w: %s", p.Name, image, err, stderr.String())
	}
	var tm metav1.TypeMeta
	if err := json.Unmarshal(stdout.Bytes(), &tm); err != nil {
		return nil, fmt.Errorf("error reading GVK from response: %w", err)
	}
	if tm.APIVersion != p.APIVersion {
		return nil, fmt.Errorf("apiVersion from credential plugin response did not match expected apiVersion:%s, actual apiVersion:%s", p.APIVersion, tm.APIVersion)
	}
	var resp response
	if err := json.Unmarshal(stdout.Bytes(), &resp); err != nil || tm.Kind != "CredentialProviderResponse" {
		return nil, fmt.Errorf("error decoding credential provider plugin response from stdout")
	}
	return &resp, nil
}

// mergeEnv is the kubelet's mergeEnvVars: the configured variables replace the inherited ones of
// the same name.
func mergeEnv(inherited []string, configured []EnvVar) []string {
	names := map[string]bool{}
	for _, v := range configured {
		names[v.Name] = true
	}
	var out []string
	for _, kv := range inherited {
		if name, _, _ := strings.Cut(kv, "="); !names[name] {
			out = append(out, kv)
		}
	}
	for _, v := range configured {
		out = append(out, v.Name+"="+v.Value)
	}
	return out
}
