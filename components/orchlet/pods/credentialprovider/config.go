package credentialprovider

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// ConfigKind is the configuration file's kind, in the group of the agent's own configuration
// (the kubelet's kubelet.config.k8s.io), at each version the kubelet reads it.
const ConfigKind = "CredentialProviderConfig"

var configAPIVersions = []string{"orchlet.config.orch.io/v1", "orchlet.config.orch.io/v1beta1", "orchlet.config.orch.io/v1alpha1"}

// PluginAPIVersions are the versions of Kubernetes' plugin protocol a provider may speak: the
// request and response carry them unchanged, so that a plugin written for the kubelet works.
var PluginAPIVersions = []string{"credentialprovider.kubelet.k8s.io/v1", "credentialprovider.kubelet.k8s.io/v1alpha1", "credentialprovider.kubelet.k8s.io/v1beta1"}

// Config is a CredentialProviderConfig.
type Config struct {
	metav1.TypeMeta `json:",inline"`
	Providers       []Provider `json:"providers"`
}

// Provider is one plugin: the executable Name in the plugin directory, the images it answers
// for, how long its answers are kept when it does not say, the protocol version it speaks, and
// the arguments and environment it runs with.
type Provider struct {
	Name                 string           `json:"name"`
	MatchImages          []string         `json:"matchImages"`
	DefaultCacheDuration *metav1.Duration `json:"defaultCacheDuration"`
	APIVersion           string           `json:"apiVersion"`
	Args                 []string         `json:"args,omitempty"`
	Env                  []EnvVar         `json:"env,omitempty"`
	// TokenAttributes, when set, runs the plugin in service account token mode: the request
	// carries a token of the pulling pod's service account for the audience, and its annotations.
	TokenAttributes *TokenAttributes `json:"tokenAttributes,omitempty"`
}

// The cache types of service account token mode: a plugin's answers are kept per token, or per
// service account.
const (
	CacheTypeToken          = "Token"
	CacheTypeServiceAccount = "ServiceAccount"
)

// TokenAttributes are the kubelet v1.34's ServiceAccountTokenAttributes.
type TokenAttributes struct {
	ServiceAccountTokenAudience          string   `json:"serviceAccountTokenAudience"`
	CacheType                            string   `json:"cacheType"`
	RequireServiceAccount                *bool    `json:"requireServiceAccount"`
	RequiredServiceAccountAnnotationKeys []string `json:"requiredServiceAccountAnnotationKeys,omitempty"`
	OptionalServiceAccountAnnotationKeys []string `json:"optionalServiceAccountAnnotationKeys,omitempty"`
}

// EnvVar is an environment variable a plugin runs with, over the agent's own.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// LoadConfig reads --image-credential-provider-config: one file, or the .json, .yaml and .yml
// files of a directory in lexicographic order with their providers merged, as the kubelet's
// readCredentialProviderConfig; each file is decoded strictly (unknown and duplicate fields are
// errors) and the merged configuration validated as the kubelet validates it.
func LoadConfig(path string) (*Config, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("unable to access path %q: %w", path, err)
	}
	files := []string{path}
	if info.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("unable to read directory %q: %w", path, err)
		}
		files = nil
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".json" || ext == ".yaml" || ext == ".yml") {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		slices.Sort(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("no configuration files found in directory %q", path)
		}
	}
	merged := &Config{}
	seen := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("unable to read file %q: %w", f, err)
		}
		cfg, err := decode(data)
		if err != nil {
			return nil, fmt.Errorf("error decoding config %q: %w", f, err)
		}
		for _, p := range cfg.Providers {
			if seen[p.Name] {
				return nil, fmt.Errorf("duplicate provider name %q found in configuration file(s)", p.Name)
			}
			seen[p.Name] = true
			merged.Providers = append(merged.Providers, p)
		}
	}
	if err := validate(merged); err != nil {
		return nil, err
	}
	return merged, nil
}

func decode(data []byte) (*Config, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	var tm metav1.TypeMeta
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, &tm); err != nil {
		return nil, err
	}
	if tm.Kind != ConfigKind || !slices.Contains(configAPIVersions, tm.APIVersion) {
		return nil, fmt.Errorf("kind %q, apiVersion %q: must be %s of %s", tm.Kind, tm.APIVersion, ConfigKind, strings.Join(configAPIVersions, ", "))
	}
	cfg := &Config{}
	strict, err := sigsjson.UnmarshalStrict(js, cfg, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(strict...); err != nil {
		return nil, err
	}
	return cfg, nil
}

// validate is the kubelet's validateCredentialProviderConfig, each problem named by its field.
func validate(c *Config) error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if len(c.Providers) == 0 {
		add("providers", "Required value: at least 1 item in plugins is required")
	}
	seen := map[string]bool{}
	for i, p := range c.Providers {
		field := func(f string) string { return fmt.Sprintf("providers[%d].%s", i, f) }
		switch {
		case strings.Contains(p.Name, "/"):
			add(field("name"), "Invalid value: %q: provider name cannot contain '/'", p.Name)
		case strings.Contains(p.Name, " "):
			add(field("name"), "Invalid value: %q: provider name cannot contain spaces", p.Name)
		case p.Name == "." || p.Name == "..":
			add(field("name"), "Invalid value: %q: provider name cannot be '%s'", p.Name, p.Name)
		case p.Name == "":
			add(field("name"), "Required value")
		}
		if seen[p.Name] {
			add(field("name"), "Duplicate value: %q", p.Name)
		}
		seen[p.Name] = true
		if p.APIVersion == "" {
			add(field("apiVersion"), "Required value")
		} else if !slices.Contains(PluginAPIVersions, p.APIVersion) {
			add(field("apiVersion"), "Unsupported value: %q: supported values: %s", p.APIVersion, strings.Join(PluginAPIVersions, ", "))
		}
		if len(p.MatchImages) == 0 {
			add(field("matchImages"), "Required value: at least 1 item in matchImages is required")
		}
		for _, m := range p.MatchImages {
			if _, err := url.Parse("https://" + m); err != nil {
				add(field("matchImages"), "Invalid value: %q: match image is invalid: %v", m, err)
			}
		}
		if p.DefaultCacheDuration == nil {
			add(field("defaultCacheDuration"), "Required value")
		} else if p.DefaultCacheDuration.Duration < 0 {
			add(field("defaultCacheDuration"), "Invalid value: %q: must be greater than or equal to 0", p.DefaultCacheDuration.Duration.String())
		}
		if t := p.TokenAttributes; t != nil {
			validateTokenAttributes(add, field("tokenAttributes"), p.APIVersion, t)
		}
	}
	return errors.Join(errs...)
}

// validateTokenAttributes is the kubelet's check of tokenAttributes.
func validateTokenAttributes(add func(field, format string, args ...any), at, apiVersion string, t *TokenAttributes) {
	if t.ServiceAccountTokenAudience == "" {
		add(at+".serviceAccountTokenAudience", "Required value")
	}
	if t.RequireServiceAccount == nil {
		add(at+".requireServiceAccount", "Required value")
	}
	if apiVersion != PluginAPIVersions[0] {
		add(at, "Forbidden: tokenAttributes is only supported for %s API version", PluginAPIVersions[0])
	}
	if t.RequireServiceAccount != nil && !*t.RequireServiceAccount && len(t.RequiredServiceAccountAnnotationKeys) > 0 {
		add(at+".requiredServiceAccountAnnotationKeys", "Forbidden: requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set")
	}
	for _, list := range []struct {
		name string
		keys []string
	}{{"requiredServiceAccountAnnotationKeys", t.RequiredServiceAccountAnnotationKeys}, {"optionalServiceAccountAnnotationKeys", t.OptionalServiceAccountAnnotationKeys}} {
		seen := map[string]bool{}
		for _, k := range list.keys {
			// A qualified name whatever its case, as annotation keys are checked.
			for _, msg := range validation.IsQualifiedName(strings.ToLower(k)) {
				add(at+"."+list.name, "Invalid value: %q: %s", k, msg)
			}
			if seen[k] {
				add(at+"."+list.name, "Duplicate value: %q", k)
			}
			seen[k] = true
		}
	}
	var both []string
	for _, k := range t.RequiredServiceAccountAnnotationKeys {
		if slices.Contains(t.OptionalServiceAccountAnnotationKeys, k) && !slices.Contains(both, k) {
			both = append(both, k)
		}
	}
	if len(both) > 0 {
		slices.Sort(both)
		add(at, "Invalid value: %q: annotation keys cannot be both required and optional", both)
	}
	types := []string{CacheTypeServiceAccount, CacheTypeToken}
	switch {
	case t.CacheType == "":
		add(at+".cacheType", "Required value: cacheType is required to be set when tokenAttributes is specified. Supported values are: %s", strings.Join(types, ", "))
	case !slices.Contains(types, t.CacheType):
		add(at+".cacheType", "Unsupported value: %q: supported values: %s", t.CacheType, strings.Join(types, ", "))
	}
}
