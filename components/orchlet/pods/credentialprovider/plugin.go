package credentialprovider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	metav1.TypeMeta `json:",inline"`
	Image           string `json:"image"`
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
}

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
func (ps *Providers) Provide(ctx context.Context, image string) []map[string]Auth {
	var out []map[string]Auth
	for _, p := range ps.plugins {
		if auth := p.provide(ctx, image); len(auth) > 0 {
			out = append(out, auth)
		}
	}
	return out
}

func (p *plugin) provide(ctx context.Context, image string) map[string]Auth {
	if !slices.ContainsFunc(p.MatchImages, func(m string) bool { return URLsMatch(m, image) }) {
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
		if c, ok := p.cache[key]; ok {
			return c.auth
		}
	}
	resp, err := p.exec(ctx, image)
	if err != nil {
		p.logger.Error(err, "Failed getting credential from external registry credential provider", "provider", p.Name, "image", image)
		return nil
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
		p.cache[key] = cached{auth: resp.Auth, expires: now.Add(keep)}
	}
	return resp.Auth
}

// exec runs the plugin as the kubelet's execPlugin: the request on stdin, the configured
// arguments, the agent's environment with the configured variables over it, at most a minute;
// the response on stdout must speak the configured version.
func (p *plugin) exec(ctx context.Context, image string) (*response, error) {
	req, err := json.Marshal(request{TypeMeta: metav1.TypeMeta{APIVersion: p.APIVersion, Kind: "CredentialProviderRequest"}, Image: image})
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
