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
	// TokenAttributes asks for a service account token in the request: not built here, refused.
	TokenAttributes any `json:"tokenAttributes,omitempty"`
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
		if p.TokenAttributes != nil {
			add(field("tokenAttributes"), "service account tokens for credential provider plugins are not supported by this orchlet; remove tokenAttributes")
		}
	}
	return errors.Join(errs...)
}
